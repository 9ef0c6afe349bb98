"""D: per-pixel real/fake discriminators of SIGN (paper section 3.2).

``SIGNHead`` builds D from its ``discriminator`` config, fills in
``in_channels`` and calls ``discriminator(x [N, in_channels]) -> [N]``
(real/fake logits). Its input depends on the head's ``classifier`` layout:
the shared trunk's pixel features (``trunk_channels``, after the trunk's
ReLU and dropout) in ``'shared_trunk'``, the SIM features ``F_x``
(``channels``) in ``'linear'``. Any module registered in ``MODELS`` with
that interface can replace these.
"""
from typing import Sequence

import torch.nn as nn
import torch.nn.functional as F
from mmseg.registry import MODELS
from torch import Tensor

from ..generators.pixel_mlp_generator import mlp_layers


@MODELS.register_module()
class PixelLinearDiscriminator(nn.Conv2d):
    """D's GAN head of the authors' layout: one linear map ``in_channels →
    1``, stored as a 1×1 conv (``discriminator.weight`` ``[1, C, 1, 1]``,
    as the authors' code and earlier checkpoints hold it) and applied to
    pixel features as a matrix product.

    Args:
        in_channels (int): width of the pixel features (the head's
            ``trunk_channels`` in the shared-trunk layout).
    """

    def __init__(self, in_channels: int):
        super().__init__(in_channels, 1, 1)

    def forward(self, x: Tensor) -> Tensor:
        """``[N, in_channels]`` → logits ``[N]``."""
        return F.linear(x, self.weight.flatten(1), self.bias).squeeze(1)


@MODELS.register_module()
class PixelMLPDiscriminator(nn.Sequential):
    """D as a separate per-pixel MLP (the paper's drawing; the head's
    ``'linear'`` layout): Linear + LeakyReLU(0.2) between layers
    (``discriminator.0.weight``, ...).

    Args:
        in_channels (int): width of the pixel features.
        hidden_channels (Sequence[int]): hidden sizes.
        dropout (float | Sequence[float]): dropout after each hidden layer.
    """

    def __init__(self,
                 in_channels: int,
                 hidden_channels: Sequence[int] = (512, ),
                 dropout=0.0):
        super().__init__(
            *mlp_layers([in_channels, *hidden_channels, 1], dropout))
        self.in_channels = in_channels

    def forward(self, x: Tensor) -> Tensor:
        """``[N, in_channels]`` → logits ``[N]``."""
        return super().forward(x).squeeze(1)
