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
from mmseg.models.utils import resize
from mmseg.registry import MODELS
from torch import Tensor, nn

from .deeplabv2_aspp import DeepLabV2ASPP


class LinearFusionConv(nn.Module):
    """A plain 1×1 convolution with a bias (``[B, C_in, H, W]`` →
    ``[B, C_out, H, W]``), under ``SegformerHead.fusion_conv``'s parameter
    names (``conv.weight``): that head's fusion weights load into it by name
    (its BN and ReLU are left out: E's output is linear). No
    ``init_weights``: torch's default initialisation, as ``nn.Conv2d``."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv(x)


@MODELS.register_module()
class MLPFusion(BaseModule):
    """Several backbone levels → one map at the first level's size::

        h = W_f [ up(ReLU(BN(W_i x_i))) for each level i ]

    Each level ``[B, in_channels[i], H_i, W_i]`` is projected to
    ``mlp_channels`` by a 1×1 conv + BN + ReLU (``SegformerHead``'s), resized
    (bilinear) to the first level's ``H_0 × W_0``, and the concatenation is
    projected to ``channels`` by a plain 1×1 conv ``W_f``. The parameters
    carry ``SegformerHead``'s names (``convs.i``, ``fusion_conv.conv``), so
    its weights load into this module by name. ``SegformerHead``
    fuses with conv + BN + ReLU and then classifies; here the output is E's,
    linear like DeepLab-v2 ASPP's, since the SIM (eq. 1) and NoisePriorNeck
    apply their own sigmoid and SPNet's projection is the word-embedding
    space. So a model with this projection is the supervised ceiling's
    decoder (configs/_base_/models/segformer_lite0.py) up to its last
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
        if not isinstance(mlp_channels, int) or mlp_channels < 1:
            raise ValueError(
                f'MLPFusion mlp_channels={mlp_channels!r}: the width of each '
                'level\'s projection is a positive integer (the ceiling: '
                '128).')
        self.in_channels = list(in_channels)
        self.channels = channels
        self.align_corners = align_corners
        self.in_index = in_index
        # SegformerHead's parameter names (convs.i, fusion_conv.conv), so
        # that its weights load by name
        self.convs = nn.ModuleList(
            ConvModule(
                c,
                mlp_channels,
                1,
                norm_cfg=norm_cfg or dict(type='BN', requires_grad=True))
            for c in self.in_channels)
        self.fusion_conv = LinearFusionConv(
            mlp_channels * len(self.in_channels), channels)

    def project(self, levels: Sequence[Tensor]) -> Tensor:
        if len(levels) != len(self.convs):
            raise ValueError(f'MLPFusion was built for {len(self.convs)} '
                             f'levels, got {len(levels)}.')
        size = levels[0].shape[2:]
        outs = [conv(x) for conv, x in zip(self.convs, levels)]
        outs = [outs[0]] + [
            resize(
                x,
                size=size,
                mode='bilinear',
                align_corners=self.align_corners) for x in outs[1:]
        ]
        return self.fusion_conv(torch.cat(outs, dim=1))

    def forward(self, inputs):
        """As a neck of its own: the levels ``in_index`` names (all by
        default), read by :func:`select_levels`."""
        in_index = self.in_index if self.in_index is not None else list(
            range(len(inputs)))
        return [
            self.project(
                select_levels(inputs, in_index, self.in_channels, 'MLPFusion'))
        ]


def build_input_proj(input_proj: Union[str, dict, None],
                     in_channels: Union[int, Sequence[int]], channels: int,
                     dilations: Sequence[int],
                     owner: str) -> Optional[nn.Module]:
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
        owned = sorted({'in_index', 'in_channels', 'channels'}
                       & set(input_proj))
        if owned:
            raise ValueError(
                f'{owner} input_proj={dict(input_proj)!r}: {", ".join(owned)} '
                f'belong to {owner} itself, which reads the levels and hands '
                f'them on; set {owner}\'s own {owned[0]} and leave it out of '
                'input_proj.')
        cfg = dict(input_proj, in_channels=in_channels, channels=channels)
        return MODELS.build(cfg)
    raise ValueError(f"{owner} input_proj must be 'aspp', None or a "
                     "projection's config such as dict(type='MLPFusion'), "
                     f'got {input_proj!r}.')


def takes_levels(proj: Union[str, dict, nn.Module, None]) -> bool:
    """Whether a projection (a module, or its config) reads the list of
    backbone levels rather than one map."""
    if isinstance(proj, dict):
        kind = proj.get('type')
        proj = MODELS.get(kind) if isinstance(kind, str) else kind
        if proj is None:
            raise KeyError(
                f'input_proj type {kind!r} is not in the {MODELS.scope}::'
                f'{MODELS.name} registry: check the name (e.g. '
                "'MLPFusion'), or that the module defining it is imported "
                '(custom_imports).')
    return bool(getattr(proj, 'takes_levels', False))


def check_levels(owner: str,
                 in_index,
                 in_channels,
                 input_transform=None,
                 allowed_transforms=(None, )) -> None:
    """Build-time check of a module that reads several backbone levels
    through its projection (which fuses them itself): ``in_index`` and
    ``in_channels`` are lists of one length, the indices distinct integers,
    and no ``input_transform`` but ``allowed_transforms`` (``SPNetHead``:
    mmseg's ``'multiple_select'``, which only hands the list on)."""
    if input_transform not in allowed_transforms:
        raise ValueError(
            f'{owner}: the input projection fuses the backbone levels '
            f'itself; leave input_transform='
            f'{allowed_transforms[0]!r} (got {input_transform!r}).')
    if not (isinstance(in_index,
                       (list, tuple)) and isinstance(in_channels,
                                                     (list, tuple))
            and len(in_index) == len(in_channels)):
        raise ValueError(
            f'{owner}: a projection over several backbone levels needs '
            'in_index and in_channels as lists of one length (one entry '
            f'per level), got in_index={in_index!r}, '
            f'in_channels={in_channels!r}.')
    if not all(
            isinstance(i, int) and not isinstance(i, bool)
            for i in in_index) or len(set(in_index)) != len(in_index):
        raise ValueError(
            f'{owner}: in_index={list(in_index)!r} must name distinct '
            'backbone outputs by integer index, finest level first.')


def select_levels(inputs, in_index, in_channels, owner: str):
    """The backbone output(s) ``in_index`` names, checked — the one rule by
    which the SIM, ``NoisePriorNeck`` and ``SPNetHead`` read the backbone:

    * every index is one of the backbone's outputs;
    * each level has the channels ``in_channels`` says (the backbone's
      widths, e.g. ``EfficientNetLite.out_channels``);
    * several levels come finest first (each at most the size of the one
      before): the first one's size is E's output size.

    Args:
        inputs (Tensor | Sequence[Tensor]): the backbone's outputs, each
            ``[B, C_i, H_i, W_i]`` (one tensor: itself, index 0).
        in_index (int | Sequence[int]): one level, or several.
        in_channels (int | Sequence[int]): their widths.
        owner (str): the module, for the messages.

    Returns:
        Tensor | list[Tensor]: one map (an int ``in_index``), or the list.
    """
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    several = isinstance(in_index, (list, tuple))
    indices = list(in_index) if several else [in_index]
    for i in indices:
        if not -len(inputs) <= i < len(inputs):
            raise IndexError(
                f'{owner} in_index={in_index!r}, but the backbone gives '
                f'{len(inputs)} output(s) (indices 0..{len(inputs) - 1}); '
                "set in_index, or the backbone's out_indices.")
    levels = [inputs[i] for i in indices]
    widths = list(in_channels) if isinstance(in_channels,
                                             (list, tuple)) else [in_channels]
    got = [x.shape[1] for x in levels]
    if len(widths) == len(levels) and got != widths:
        raise ValueError(
            f'{owner} in_channels={in_channels!r}, but the backbone outputs '
            f'{indices} have {got} channels: set in_channels={got!r} (or '
            'in_index to the levels meant).')
    sizes = [tuple(x.shape[2:]) for x in levels]
    if any(b[0] > a[0] or b[1] > a[1] for a, b in zip(sizes, sizes[1:])):
        raise ValueError(
            f'{owner} in_index={in_index!r} reads levels of sizes {sizes}: '
            'give them finest first (E\'s output takes the first level\'s '
            'size), e.g. in_index=' +
            repr(sorted(indices, key=lambda i: -inputs[i].shape[-1])) + '.')
    return levels if several else levels[0]
