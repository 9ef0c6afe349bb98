"""The input projection of the encoder E (backbone + projection), shared by
the SIM, NoisePriorNeck and SPNetHead: DeepLab-v2's ASPP on one backbone
level (the paper's E, section 4.1), or an all-MLP fusion of several levels
(SegFormer's decoder, Xie et al., NeurIPS 2021; mmseg's ``SegformerHead``)
for backbones whose stride-8 level is too thin to carry E alone
(EfficientNet-Lite: 40 channels at stride 8; docs/camvid.md, "ImageNet
features")."""
from typing import Optional, Sequence, Union

import torch
from mmcv.cnn import ConvModule
from mmengine.model import BaseModule
from torch import Tensor, nn

from mmseg.models.utils import resize
from mmseg.registry import MODELS
from .deeplabv2_aspp import DeepLabV2ASPP


@MODELS.register_module()
class MLPFusion(BaseModule):
    """Several backbone levels → one map at the first level's size::

        h = W_f [ up(ReLU(BN(W_i x_i))) for each level i ]

    Each level ``[B, in_channels[i], H_i, W_i]`` is projected to
    ``mlp_channels`` by a 1×1 conv + BN + ReLU (``SegformerHead``'s), resized
    (bilinear) to the first level's ``H_0 × W_0``, and the concatenation is
    projected to ``channels`` by a plain 1×1 conv ``W_f``. ``SegformerHead``
    fuses with conv + BN + ReLU and then classifies; here the output is E's,
    linear like DeepLab-v2 ASPP's, since the SIM (eq. 1) and NoisePriorNeck
    apply their own sigmoid and SPNet's projection is the word-embedding
    space. So a model with this projection is the supervised ceiling's
    decoder (configs/_base_/models/lite0_segformer-head.py) up to its last
    fusion layer.

    Args:
        in_channels (Sequence[int]): channels of each level, finest first.
        channels (int): output channels.
        mlp_channels (int): width of each level's projection (the
            ceiling's ``channels``).
        norm_cfg (dict): the per-level projections' norm.
        in_index (Sequence[int], optional): as a neck on its own: which
            backbone outputs ``forward`` reads (default: all of them).

    ``project(levels)``: ``[B, channels, H_0, W_0]``; ``forward(levels)``:
    ``[that]`` (a neck's output).
    """
    takes_levels = True

    def __init__(self,
                 in_channels: Sequence[int],
                 channels: int,
                 mlp_channels: int = 128,
                 norm_cfg: Optional[dict] = None,
                 align_corners: bool = False,
                 in_index: Optional[Sequence[int]] = None,
                 init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        if isinstance(in_channels, int) or len(in_channels) < 1:
            raise ValueError(
                'MLPFusion takes several backbone levels: in_channels must '
                f'be a list (one entry per level), got {in_channels!r}.')
        self.in_channels = list(in_channels)
        self.channels = channels
        self.align_corners = align_corners
        self.in_index = in_index
        self.levels = nn.ModuleList(
            ConvModule(c, mlp_channels, 1,
                       norm_cfg=norm_cfg or dict(type='BN',
                                                 requires_grad=True))
            for c in self.in_channels)
        self.fuse = nn.Conv2d(mlp_channels * len(self.in_channels), channels,
                              1)

    def project(self, levels: Sequence[Tensor]) -> Tensor:
        if len(levels) != len(self.levels):
            raise ValueError(f'MLPFusion was built for {len(self.levels)} '
                             f'levels, got {len(levels)}.')
        size = levels[0].shape[2:]
        outs = [level(x) for level, x in zip(self.levels, levels)]
        outs = [outs[0]] + [
            resize(x, size=size, mode='bilinear',
                   align_corners=self.align_corners) for x in outs[1:]
        ]
        return self.fuse(torch.cat(outs, dim=1))

    def forward(self, inputs):
        if self.in_index is not None:
            inputs = [inputs[i] for i in self.in_index]
        return [self.project(inputs)]


def build_input_proj(input_proj: Union[str, dict, None],
                     in_channels: Union[int, Sequence[int]], channels: int,
                     dilations: Sequence[int], owner: str
                     ) -> Optional[nn.Module]:
    """E's projection from ``in_channels`` to ``channels``: ``'aspp'``
    (DeepLab-v2 ASPP with ``dilations``, one level), a projection's config
    (e.g. ``dict(type='MLPFusion', mlp_channels=128)``, given
    ``in_channels`` and ``channels`` here) or ``None`` (no projection; the
    caller checks the widths). ``owner`` names the module in errors."""
    if input_proj is None:
        return None
    if input_proj == 'aspp':
        if not isinstance(in_channels, int):
            raise ValueError(
                f"{owner} input_proj='aspp' reads one backbone level: "
                f'in_channels must be an int, got {in_channels!r} (for '
                "several levels use input_proj=dict(type='MLPFusion')).")
        return DeepLabV2ASPP(in_channels, channels, dilations)
    if isinstance(input_proj, dict):
        cfg = dict(input_proj, in_channels=in_channels, channels=channels)
        return MODELS.build(cfg)
    raise ValueError(f"{owner} input_proj must be 'aspp', None or a "
                     "projection's config such as dict(type='MLPFusion'), "
                     f'got {input_proj!r}.')


def takes_levels(proj: Union[str, dict, nn.Module, None]) -> bool:
    """Whether a projection (a module, or its config) reads the list of
    backbone levels rather than one map."""
    if isinstance(proj, dict):
        proj = proj.get('type')
        if isinstance(proj, str):
            proj = MODELS.get(proj)
    return bool(getattr(proj, 'takes_levels', False))


def check_levels(owner: str, in_index, in_channels,
                 input_transform=None) -> None:
    """A projection that reads several levels takes ``in_index`` and
    ``in_channels`` as lists of one length, and fuses them itself."""
    if input_transform is not None:
        raise ValueError(
            f'{owner}: the input projection fuses the backbone levels '
            f'itself; leave input_transform=None (got {input_transform!r}).')
    if not (isinstance(in_index, (list, tuple))
            and isinstance(in_channels, (list, tuple))
            and len(in_index) == len(in_channels)):
        raise ValueError(
            f'{owner}: a projection over several backbone levels needs '
            'in_index and in_channels as lists of one length (one entry '
            f'per level), got in_index={in_index!r}, '
            f'in_channels={in_channels!r}.')
