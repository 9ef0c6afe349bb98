"""Make the 33-class Pascal Context labels (CaGNet / SIGN protocol).

Input: mmseg's 59-class label maps (``SegmentationClassContext``, made by
mmseg's ``tools/dataset_converters/pascal_context.py``). Output: label maps
with 0..32 for the 33 classes and 255 for everything else.

Example::

    python tools/dataset_converters/pascal_context33.py \
        data/VOCdevkit/VOC2010/SegmentationClassContext \
        data/VOCdevkit/VOC2010/SegmentationClassContext33 --nproc 8
"""
import argparse
import os
import os.path as osp
from functools import partial

import mmengine
import numpy as np
from PIL import Image

from mmseg_sign.datasets.context33 import context59_to_33_lut


def convert_one(name, src_dir, dst_dir, lut):
    label = np.asarray(Image.open(osp.join(src_dir, name)))
    Image.fromarray(lut[label]).save(osp.join(dst_dir, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('src', help='folder of 59-class label PNGs')
    parser.add_argument('dst', help='output folder for 33-class label PNGs')
    parser.add_argument('--nproc', type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.dst, exist_ok=True)
    names = sorted(n for n in os.listdir(args.src) if n.endswith('.png'))
    if not names:
        raise SystemExit(f'No .png label maps found in {args.src}.')
    work = partial(
        convert_one,
        src_dir=args.src,
        dst_dir=args.dst,
        lut=context59_to_33_lut())
    if args.nproc > 1:
        mmengine.track_parallel_progress(work, names, args.nproc)
    else:
        mmengine.track_progress(work, names)
    print(f'Wrote {len(names)} 33-class label maps to {args.dst}')


if __name__ == '__main__':
    main()
