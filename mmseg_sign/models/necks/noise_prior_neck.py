"""NoisePriorNeck: ZS3Net's feature path, whose latent code is Gaussian
noise (paper Fig. 2a; Bucher et al., "Zero-Shot Semantic Segmentation",
NeurIPS 2019; GitHub: valeoai/ZS3)."""
from typing import Optional, Sequence, Tuple

import torch
from mmengine.model import BaseModule

from mmseg.registry import MODELS
from .deeplabv2_aspp import DeepLabV2ASPP


@MODELS.register_module()
class NoisePriorNeck(BaseModule):
    """``F_x = sigmoid(ASPP(x))``; the latent ``z`` is noise that does not
    depend on the image.

    The neck of the ZS3Net baseline in ``ZeroShotEncoderDecoder``: the same
    encoder E (backbone + DeepLab-v2 ASPP) and feature range as the SIM's
    ``F_x``, without a spatial or contextual prior. It returns the SIM's
    tuple so that ``SIGNHead`` trains it unchanged: ``mu = logvar = 0``
    (the KL term of eq. 2 is then exactly 0) and ``z ~ N(0, I)`` in
    training, ``z = mu = 0`` at test time. G thus sees ``M(y) ⊕ noise``,
    ZS3Net's GMMN input.

    Args:
        in_channels (int): channels of the backbone level ``in_index``.
        channels (int): feature channels ``C`` of ``F_x``.
        in_index (int): which backbone output to use.
        dilations (Sequence[int]): the ASPP's dilations.
        latent_channels (int, optional): channels of ``z`` (default
            ``channels``; ZS3Net: the word-embedding width, 300).

    Returns from ``forward``: ``(F_x [B, C, H, W], mu, logvar, z)``, the
    last three ``[B, latent_channels, H, W]``.
    """

    def __init__(self,
                 in_channels: int,
                 channels: int = 600,
                 in_index: int = -1,
                 dilations: Sequence[int] = (6, 12, 18, 24),
                 latent_channels: Optional[int] = None,
                 init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        self.in_index = in_index
        self.channels = channels
        self.latent_channels = latent_channels or channels
        self.input_proj = DeepLabV2ASPP(in_channels, channels, dilations)

    def forward(self, inputs) -> Tuple[torch.Tensor, ...]:
        x = inputs[self.in_index] if isinstance(inputs,
                                                (list, tuple)) else inputs
        feats = torch.sigmoid(self.input_proj.project(x))
        b, _, h, w = feats.shape
        mu = feats.new_zeros(b, self.latent_channels, h, w)
        z = torch.randn_like(mu) if self.training else mu
        return feats, mu, mu, z
