"""DeepLab-v2 ASPP as a neck: the projection into SIGN's feature space."""
from typing import Sequence

from mmseg.models.decode_heads.aspp_head import ASPPModule
from mmseg.registry import MODELS


@MODELS.register_module()
class DeepLabV2ASPP(ASPPModule):
    """Sum of parallel 3×3 convolutions with different dilations (DeepLab-v2
    ASPP), from one backbone level to ``channels``.

    Used inside the SIM as its input projection, and on its own as the neck
    of the plain segmentation baseline (backbone + ASPP + C) that
    ``tools/analysis/benchmark.py`` compares SIGN against. The branches are
    mmseg's ``ASPPModule`` without norm or activation.

    Returns ``[x]`` with ``x`` ``[B, channels, H, W]``.
    """

    def __init__(self,
                 in_channels: int,
                 channels: int = 600,
                 dilations: Sequence[int] = (6, 12, 18, 24),
                 in_index: int = -1):
        super().__init__(
            dilations,
            in_channels,
            channels,
            conv_cfg=None,
            norm_cfg=None,
            act_cfg=None)
        self.in_index = in_index

    def project(self, x):
        """``[B, in_channels, H, W]`` → ``[B, channels, H, W]``."""
        return sum(branch(x) for branch in self)

    def forward(self, inputs):
        x = inputs[self.in_index] if isinstance(inputs,
                                                (list, tuple)) else inputs
        return [self.project(x)]
