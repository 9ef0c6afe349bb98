# Copyright (c) OpenMMLab. All rights reserved.
"""Write random images and labels in the Pascal VOC 2012 + SBD layout that
``configs/_base_/datasets/voc12_aug_zs.py`` reads, so that the shipped
paper configs (``configs/sign/sign_voc*.py``) run unchanged on a machine
without the real data: an install check (GPU, ``--amp``, ``--launcher``)
before the download, not an accuracy test.

Each label map is a grid of rectangles of random VOC labels (0 background,
1..20 the classes, unseen ones included, and 255 borders); the image paints
each class in its own colour plus noise. ``SegmentationClassAug`` (train)
and ``SegmentationClass`` (val) hold the same maps.

Example::

    python tools/analysis/make_random_voc.py data/VOCdevkit/VOC2012 \
        --num-train 32 --num-val 8
    python tools/train.py configs/sign/sign_voc_ast.py --amp \
        --cfg-options model.pretrained=None train_cfg.stages.0.iters=20
"""
import argparse
import os
import os.path as osp

import numpy as np
from PIL import Image

#: one fixed colour per label value
PALETTE = np.random.default_rng(0).integers(0, 256, (256, 3))


def random_sample(rng, height, width, cells=4):
    """A (H, W, 3) uint8 image and its (H, W) uint8 VOC label map."""
    label = np.zeros((height, width), np.uint8)
    ys = np.linspace(0, height, cells + 1).astype(int)
    xs = np.linspace(0, width, cells + 1).astype(int)
    for i in range(cells):
        for j in range(cells):
            label[ys[i]:ys[i + 1], xs[j]:xs[j + 1]] = rng.integers(0, 21)
    label[ys[1:-1], :] = 255  # object borders, as VOC's void outlines
    image = PALETTE[label] + rng.normal(0, 20, (height, width, 3))
    return np.clip(image, 0, 255).astype(np.uint8), label


def write_split(root, names, rng, size):
    for name in names:
        image, label = random_sample(rng, *size)
        Image.fromarray(image).save(
            osp.join(root, 'JPEGImages', name + '.jpg'))
        for folder in ('SegmentationClassAug', 'SegmentationClass'):
            Image.fromarray(label).save(osp.join(root, folder, name + '.png'))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('root', help='e.g. data/VOCdevkit/VOC2012')
    parser.add_argument('--num-train', type=int, default=32)
    parser.add_argument('--num-val', type=int, default=8)
    parser.add_argument(
        '--size',
        type=int,
        nargs=2,
        default=(375, 500),
        metavar=('H', 'W'),
        help='image size (VOC-like)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--force',
        action='store_true',
        help='write into a folder that already holds '
        'images, labels or split lists (mixing the random '
        'samples into them and replacing aug.txt / val.txt)')
    args = parser.parse_args(argv)
    folders = ('JPEGImages', 'SegmentationClassAug', 'SegmentationClass',
               'ImageSets/Segmentation')
    held = {
        f: len(os.listdir(osp.join(args.root, f)))
        for f in folders if osp.isdir(osp.join(args.root, f))
        and os.listdir(osp.join(args.root, f))
    }
    if held and not args.force:
        parser.error(
            f'{args.root} already holds a data set (' +
            ', '.join(f'{f}: {n} files' for f, n in held.items()) +
            '): random samples would be mixed into it and its split lists '
            'aug.txt / val.txt replaced. Give a new folder, e.g. '
            'data/random_voc/VOC2012, or --force to write into it anyway.')
    rng = np.random.default_rng(args.seed)
    for folder in folders:
        os.makedirs(osp.join(args.root, folder), exist_ok=True)
    splits = dict(
        aug=[f'train_{i:05d}' for i in range(args.num_train)],
        val=[f'val_{i:05d}' for i in range(args.num_val)])
    for split, names in splits.items():
        write_split(args.root, names, rng, args.size)
        with open(
                osp.join(args.root, 'ImageSets', 'Segmentation',
                         split + '.txt'), 'w') as f:
            f.write('\n'.join(names) + '\n')
    print(f'{args.num_train} train / {args.num_val} val random VOC samples '
          f'in {args.root}')


if __name__ == '__main__':
    main()
