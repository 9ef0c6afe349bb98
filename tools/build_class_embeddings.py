# Copyright (c) OpenMMLab. All rights reserved.
"""Build a class-embedding table (``.npz``) from word-vector files and / or
the text tower of a local CLIP checkpoint.

Example (the published 600-d setting, word2vec ‖ fastText)::

    python tools/build_class_embeddings.py --dataset voc \\
        --source GoogleNews-vectors-negative300.bin:word2vec_binary \\
        --source crawl-300d-2M.vec:word2vec \\
        --out data/embeddings/voc20_w2v_ft.npz

CLIP text embeddings (a directory written by ``save_pretrained``; nothing
is downloaded; ``pip install 'mmseg-sign[clip]'``), alone (512-d for
ViT-B/32) or concatenated with word vectors (512 + 300 = 812-d)::

    python tools/build_class_embeddings.py --dataset voc \\
        --source clip:checkpoints/clip-vit-base-patch32 \\
        --source GoogleNews-vectors-negative300.bin:word2vec_binary \\
        --out data/embeddings/voc20_clip_w2v.npz
"""
import argparse
import json
import os.path as osp
import pickle
import sys

from mmseg_sign.embeddings import (CLIP_FORMAT, WORD_VECTOR_FORMATS,
                                   build_class_embeddings, read_templates,
                                   save_class_embeddings)

DATASETS = ('voc', 'context', 'context59', 'cocostuff', 'toy')


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
    if name == 'toy':
        from mmseg_sign.datasets.toy_data import TOY_CLASSES
        return TOY_CLASSES
    raise ValueError(f'Unknown dataset {name!r}')


def read_class_file(path):
    """One class name a line; blank lines and ``#`` comments skipped."""
    with open(path, encoding='utf-8') as f:
        names = [line.strip() for line in f]
    return [n for n in names if n and not n.startswith('#')]


SYNONYMS_EXAMPLE = ('{"pottedplant": "potted plant", '
                    '"tvmonitor": ["tv", "monitor"]}')


def read_synonyms(path):
    """The ``--synonyms`` JSON file: an object mapping class names to a
    string or a list of strings; a ValueError naming the file otherwise."""
    where = f'--synonyms {path}'
    try:
        with open(path, encoding='utf-8') as f:
            synonyms = json.load(f)
    except OSError as err:
        raise ValueError(f'{where}: cannot read it ({err}).') from None
    except UnicodeDecodeError as err:
        raise ValueError(f'{where}: not UTF-8 text ({err.reason} at byte '
                         f'{err.start}); save it as UTF-8 JSON, e.g. '
                         f'{SYNONYMS_EXAMPLE}.') from None
    except json.JSONDecodeError as err:
        raise ValueError(f'{where}: not valid JSON ({err.msg} at line '
                         f'{err.lineno}, column {err.colno}); expected an '
                         f'object such as {SYNONYMS_EXAMPLE}.') from None
    if not isinstance(synonyms, dict):
        raise ValueError(f'{where}: holds a JSON {type(synonyms).__name__},'
                         ' not an object mapping class names to words, '
                         f'e.g. {SYNONYMS_EXAMPLE}.')
    for name, words in synonyms.items():
        ok = isinstance(words, str) and words.strip() or (
            isinstance(words, list) and words and all(
                isinstance(w, str) and w.strip() for w in words))
        if not ok:
            raise ValueError(
                f'{where}: the words of {name!r} must be a non-empty string '
                f'or a list of non-empty strings, got {words!r}; e.g. '
                f'{SYNONYMS_EXAMPLE}.')
    return synonyms


def parse_source(spec):
    """``PATH[:FORMAT]`` or ``clip:PATH`` -> ``dict(path=..., format=...)``.
    """
    prefix, sep, rest = spec.partition(':')
    if sep and prefix.lower() == CLIP_FORMAT and rest:
        return dict(path=rest, format=CLIP_FORMAT)
    path, sep, fmt = spec.rpartition(':')
    if sep and fmt.lower() in WORD_VECTOR_FORMATS + (CLIP_FORMAT, 'auto'):
        return dict(path=path, format=fmt.lower())
    return dict(path=spec, format='auto')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Build a class-embedding table from word vectors '
        'and / or CLIP text embeddings')
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        '--dataset', choices=DATASETS, help='a built-in class list')
    group.add_argument(
        '--classes', metavar='FILE', help='a file with one class a line')
    parser.add_argument(
        '--source',
        metavar='PATH[:FORMAT] | clip:DIR',
        action='append',
        required=True,
        help='word-vector file, or clip:DIR for the text tower of a local '
        'Hugging Face CLIP checkpoint (a save_pretrained directory with '
        'the tokenizer; never downloaded); repeat for several sources, '
        'concatenated in the given order. FORMAT: '
        f'{", ".join(WORD_VECTOR_FORMATS)} or auto (default, guessed from '
        'the extension and header)')
    parser.add_argument(
        '--clip-templates',
        metavar='FILE',
        help='CLIP prompt templates, one a line with {} for the class '
        'name (blank lines and # comments skipped); default: a built-in '
        'list of 7 ("a photo of a {}.", "there is a {} in the scene.", '
        '...)')
    parser.add_argument(
        '--clip-device',
        default='cpu',
        help='torch device of the CLIP text tower (default cpu)')
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
    sources = [parse_source(spec) for spec in args.source]
    try:
        if args.dataset:
            names = list(dataset_classes(args.dataset))
        else:
            names = read_class_file(args.classes)
        synonyms = read_synonyms(args.synonyms) if args.synonyms else None
        templates = None
        if args.clip_templates:
            if not any(s['format'] == CLIP_FORMAT for s in sources):
                raise ValueError('--clip-templates needs a clip:DIR source')
            templates = read_templates(args.clip_templates)
        for source in sources:
            if source['format'] == CLIP_FORMAT:
                source.update(templates=templates, device=args.clip_device)
        table = build_class_embeddings(
            names,
            sources,
            synonyms=synonyms,
            normalize=not args.no_normalize,
            use_default_synonyms=not args.no_default_synonyms,
            fasttext_oov=args.fasttext_oov)
    except (KeyError, ValueError, TypeError, OSError, ImportError,
            pickle.UnpicklingError) as err:
        # Missing words, unreadable or unsafe sources (e.g. a hostile .kv
        # refused by the allow-list), a CLIP source without transformers
        # or not a CLIP checkpoint: the message names the file and the
        # fix; no traceback.
        sys.exit(f'error: {err}')
    path = save_class_embeddings(args.out, names, table)
    print(f'class embeddings: {table.shape[0]} classes x {table.shape[1]} '
          f'dims -> {osp.abspath(path)}')


if __name__ == '__main__':
    main()
