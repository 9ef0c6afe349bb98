"""Convert the published CaGNet / SIGN word vectors to a class-embedding table.

Download ``dataset/<name>/word_vectors/fasttext.pkl`` and ``word2vec.pkl``
from CaGNet's GitHub repository (``<name>``: ``voc12``, ``context`` or
``cocostuff``; SIGN uses the same files). The table holds fastText ‖
word2vec (600-d), L2-normalised after the concatenation, in the project's
class order. The files are read with a loader that only rebuilds numpy
arrays.

Example::

    python tools/dataset_converters/cagnet_word_vectors.py --dataset voc \
        --fasttext CaGNet/dataset/voc12/word_vectors/fasttext.pkl \
        --word2vec CaGNet/dataset/voc12/word_vectors/word2vec.pkl \
        --novel CaGNet/dataset/voc12/split/novel_cls.npy \
        --out data/embeddings/voc20_cagnet_fasttext_word2vec.npz
"""
import argparse
import os.path as osp
import pickle
import sys

import numpy as np

from mmseg_sign.embeddings import (CAGNET_DATASETS, cagnet_class_embeddings,
                                   cagnet_split_classes, save_class_embeddings)
from mmseg_sign.utils.atomic import check_output_file


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--dataset', choices=CAGNET_DATASETS, required=True)
    parser.add_argument('--fasttext', required=True, metavar='FASTTEXT.pkl')
    parser.add_argument('--word2vec', required=True, metavar='WORD2VEC.pkl')
    parser.add_argument(
        '--labels',
        metavar='labels_refined.txt',
        help='row order of the .pkl files (default: the built-in copy of '
        "CaGNet's labels_refined.txt)")
    parser.add_argument(
        '--novel',
        metavar='novel_cls.npy',
        help="CaGNet's split file; only printed, as class names")
    parser.add_argument('--out', required=True, metavar='OUT.npz')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:  # never onto CaGNet's files (the downloads it reads)
        check_output_file(
            args.out, {
                '--fasttext file': args.fasttext,
                '--word2vec file': args.word2vec,
                '--labels file': args.labels,
                '--novel file': args.novel
            },
            f'{args.dataset}_cagnet.npz',
            force=args.force)
    except ValueError as err:
        sys.exit(f'error: {err}')
    try:
        names, table = cagnet_class_embeddings(
            args.dataset,
            args.fasttext,
            args.word2vec,
            labels_path=args.labels)
        novel = None
        if args.novel:
            ids = np.load(args.novel, allow_pickle=False).ravel()
            novel = cagnet_split_classes(
                args.dataset, ids, labels_path=args.labels)
    except (OSError, ValueError, pickle.UnpicklingError) as err:
        sys.exit(f'error: {err}')
    path = save_class_embeddings(args.out, names, table)
    print(f'CaGNet {args.dataset}: {table.shape[0]} classes x '
          f'{table.shape[1]} dims -> {osp.abspath(path)}')
    if novel is not None:
        print(f'published novel classes: {", ".join(novel)}')


if __name__ == '__main__':
    main()
