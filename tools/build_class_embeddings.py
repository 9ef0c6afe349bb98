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
import os.path as osp
import pickle
import sys

from mmseg_sign.embeddings import (CLIP_FORMAT, WORD_VECTOR_FORMATS,
                                   build_class_embeddings, read_templates,
                                   save_class_embeddings)
from mmseg_sign.embeddings.sources import (  # noqa: F401 (the tool's API)
    DATASETS, dataset_classes, parse_source, read_class_file, read_synonyms)
from mmseg_sign.utils.atomic import check_output_file


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
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    sources = [parse_source(spec) for spec in args.source]
    try:  # never onto what it reads (a word-vector file, the class list)
        check_output_file(
            args.out, {
                **{f'source {s["path"]}': s['path']
                   for s in sources}, 'class list': args.classes,
                'synonyms file': args.synonyms,
                'CLIP templates file': args.clip_templates
            },
            'classes.npz',
            force=args.force)
    except ValueError as err:
        sys.exit(f'error: {err}')
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
