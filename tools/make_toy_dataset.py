# Copyright (c) OpenMMLab. All rights reserved.
"""Write the toy zero-shot dataset (VOC layout + class embeddings).

Example::

    python tools/make_toy_dataset.py --out data/toy
"""
import argparse
import json
import os
import os.path as osp
import shutil

from mmseg_sign.analysis.toy_data import make_toy_dataset


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Generate the toy zero-shot segmentation dataset')
    parser.add_argument(
        '--out', default='data/toy', help='dataset root (default data/toy)')
    parser.add_argument('--num-train', type=int, default=200)
    parser.add_argument('--num-val', type=int, default=50)
    parser.add_argument(
        '--train-size',
        type=int,
        nargs=2,
        default=(64, 64),
        metavar=('H', 'W'),
        help='train image height and width')
    parser.add_argument(
        '--val-size',
        type=int,
        nargs=2,
        default=(64, 64),
        metavar=('H', 'W'),
        help='val image height and width (may be larger than train)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the toy data set already in --out (its images, '
        'labels, split lists and class embeddings are removed first)')
    parser.add_argument(
        '--embed-dims',
        type=int,
        nargs='+',
        default=(300, 300),
        help='dims of each toy word-vector source (default 300 300)')
    args = parser.parse_args(argv)
    for name in ('num_train', 'num_val'):
        if getattr(args, name) < 1:
            parser.error(f'--{name.replace("_", "-")} must be at least 1 '
                         f'(got {getattr(args, name)}): a split without '
                         'images can be neither trained nor scored.')
    for name in ('train_size', 'val_size'):
        if min(getattr(args, name)) < 16:
            parser.error(f'--{name.replace("_", "-")} {getattr(args, name)}'
                         ': each side must be at least 16 pixels (the toy '
                         "model's output stride is 8).")
    held = sorted(os.listdir(args.out)) if osp.isdir(args.out) else []
    if held and not args.force:
        parser.error(
            f'{args.out} is not empty ({", ".join(held[:5])}'
            f'{" ..." if len(held) > 5 else ""}): a new data set would be '
            'mixed with what is there. Give a new folder, or --force to '
            'replace the toy data set in it.')
    return args


# what make_toy_dataset writes: what --force removes first
TOY_LAYOUT = ('JPEGImages', 'SegmentationClass', 'ImageSets',
              'class_embeddings.npz')


def main(argv=None):
    args = parse_args(argv)
    for name in TOY_LAYOUT if args.force else ():
        path = osp.join(args.out, name)
        if osp.isdir(path):
            shutil.rmtree(path)
        elif osp.exists(path):
            os.remove(path)
    summary = make_toy_dataset(
        args.out,
        num_train=args.num_train,
        num_val=args.num_val,
        train_size=tuple(args.train_size),
        val_size=tuple(args.val_size),
        seed=args.seed,
        embed_dims=tuple(args.embed_dims))
    print(json.dumps(summary, indent=2))


if __name__ == '__main__':
    main()
