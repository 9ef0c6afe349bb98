"""NoisePriorNeck: ZS3Net's feature path, whose latent code is Gaussian
noise (paper Fig. 2a; Bucher et al., "Zero-Shot Semantic Segmentation",
NeurIPS 2019; GitHub: valeoai/ZS3)."""
from typing import Optional, Sequence, Tuple, Union

import torch
from mmengine.model import BaseModule
from mmseg.registry import MODELS

from .input_projections import (build_input_proj, check_levels, select_levels,
                                takes_levels)


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
        in_channels (int | list[int]): channels of the backbone level
            ``in_index`` (a list with a projection over several levels).
        channels (int): feature channels ``C`` of ``F_x``.
        in_index (int | list[int]): which backbone output(s) to use.
        dilations (Sequence[int]): the ASPP's dilations.
        input_proj (str | dict): E's projection, as the SIM's: ``'aspp'``
            or e.g. ``dict(type='MLPFusion')`` over several levels.
        latent_channels (int, optional): channels of ``z`` (default
            ``channels``; ZS3Net: the word-embedding width, 300).

    Returns from ``forward``: ``(F_x [B, C, H, W], mu, logvar, z)``, the
    last three ``[B, latent_channels, H, W]``.
    """

    #: no latent code of the pixels: z is noise (0 at its mean), so a
    #: transfer stage cannot feed G a posterior (``latent='posterior'``)
    has_posterior = False

    def __init__(self,
                 in_channels: Union[int, Sequence[int]],
                 channels: int = 600,
                 in_index: Union[int, Sequence[int]] = -1,
                 dilations: Sequence[int] = (6, 12, 18, 24),
                 latent_channels: Optional[int] = None,
                 input_proj: Union[str, dict] = 'aspp',
                 init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        if input_proj is None:
            raise ValueError("NoisePriorNeck needs an input projection "
                             "(input_proj='aspp' or a projection's config).")
        self.takes_levels = takes_levels(input_proj)
        if self.takes_levels:
            check_levels('NoisePriorNeck', in_index, in_channels)
        self.in_index = in_index
        self.in_channels = in_channels
        self.channels = channels
        self.latent_channels = latent_channels or channels
        self.input_proj = build_input_proj(input_proj, in_channels, channels,
                                           dilations, 'NoisePriorNeck')

    def forward(self, inputs) -> Tuple[torch.Tensor, ...]:
        x = select_levels(inputs, self.in_index, self.in_channels,
                          'NoisePriorNeck')
        feats = torch.sigmoid(self.input_proj.project(x))
        b, _, h, w = feats.shape
        mu = feats.new_zeros(b, self.latent_channels, h, w)
        z = torch.randn_like(mu) if self.training else mu
        return feats, mu, mu, z
