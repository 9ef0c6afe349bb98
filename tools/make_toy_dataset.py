# Copyright (c) OpenMMLab. All rights reserved.
"""Write the toy zero-shot dataset (VOC layout + class embeddings).

Example::

    python tools/make_toy_dataset.py --out data/toy
"""
import argparse
import json

from mmseg_sign.datasets.toy_data import make_toy_dataset


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
        '--embed-dims',
        type=int,
        nargs='+',
        default=(300, 300),
        help='dims of each toy word-vector source (default 300 300)')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
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
