# Copyright (c) OpenMMLab. All rights reserved.
"""Build a class-embedding table (``.npz``) from word-vector files.

Example (the published 600-d setting, word2vec ‖ fastText)::

    python tools/build_class_embeddings.py --dataset voc \\
        --source GoogleNews-vectors-negative300.bin:word2vec_binary \\
        --source crawl-300d-2M.vec:word2vec \\
        --out data/embeddings/voc20_w2v_ft.npz
"""
import argparse
import json
import os.path as osp
import pickle
import sys

from mmseg_sign.embeddings import (WORD_VECTOR_FORMATS,
                                   build_class_embeddings,
                                   save_class_embeddings)

DATASETS = ('voc', 'context', 'context59', 'cocostuff')


def dataset_classes(name):
    """Class names of a supported benchmark, in label order."""
    from mmseg_sign.datasets import class_names
    if name == 'voc':
        return class_names.VOC20_CLASSES
    if name == 'context':
        return class_names.CONTEXT33_CLASSES
    if name == 'cocostuff':
        return class_names.COCOSTUFF171_CLASSES
    if name == 'context59':
        from mmseg.datasets import PascalContextDataset59
        return PascalContextDataset59.METAINFO['classes']
    raise ValueError(f'Unknown dataset {name!r}')


def read_class_file(path):
    """One class name a line; blank lines and ``#`` comments skipped."""
    with open(path, encoding='utf-8') as f:
        names = [line.strip() for line in f]
    return [n for n in names if n and not n.startswith('#')]


def parse_source(spec):
    """``PATH[:FORMAT]`` -> ``dict(path=..., format=...)``."""
    path, sep, fmt = spec.rpartition(':')
    if sep and fmt.lower() in WORD_VECTOR_FORMATS + ('auto', ):
        return dict(path=path, format=fmt.lower())
    return dict(path=spec, format='auto')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Build a class-embedding table from word vectors')
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        '--dataset', choices=DATASETS, help='a built-in class list')
    group.add_argument(
        '--classes', metavar='FILE', help='a file with one class a line')
    parser.add_argument(
        '--source',
        metavar='PATH[:FORMAT]',
        action='append',
        required=True,
        help='word-vector file; repeat for several sources, concatenated '
        f'in the given order. FORMAT: {", ".join(WORD_VECTOR_FORMATS)} or '
        'auto (default, guessed from the extension and header)')
    parser.add_argument(
        '--synonyms',
        metavar='JSON_FILE',
        help='JSON object: class name -> words (a string or a list); '
        'overrides the built-in synonyms')
    parser.add_argument(
        '--no-default-synonyms',
        action='store_true',
        help='use only the synonyms of --synonyms')
    parser.add_argument(
        '--no-normalize',
        action='store_true',
        help='do not L2-normalise the concatenated vectors (each source '
        'part is still L2-normalised)')
    parser.add_argument(
        '--fasttext-oov',
        action='store_true',
        help='let fastText .bin sources build vectors of unknown words '
        'from subwords')
    parser.add_argument(
        '--out', required=True, metavar='OUT.npz', help='output file')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.dataset:
        names = list(dataset_classes(args.dataset))
    else:
        names = read_class_file(args.classes)
    synonyms = None
    if args.synonyms:
        with open(args.synonyms, encoding='utf-8') as f:
            synonyms = json.load(f)
    sources = [parse_source(spec) for spec in args.source]
    try:
        table = build_class_embeddings(
            names,
            sources,
            synonyms=synonyms,
            normalize=not args.no_normalize,
            use_default_synonyms=not args.no_default_synonyms,
            fasttext_oov=args.fasttext_oov)
    except (KeyError, ValueError, OSError, pickle.UnpicklingError) as err:
        # Missing words, unreadable or unsafe sources (e.g. a hostile .kv
        # refused by the allow-list): the message names the file and the
        # fix; no traceback.
        sys.exit(f'error: {err}')
    path = save_class_embeddings(args.out, names, table)
    print(f'class embeddings: {table.shape[0]} classes x {table.shape[1]} '
          f'dims -> {osp.abspath(path)}')


if __name__ == '__main__':
    main()
