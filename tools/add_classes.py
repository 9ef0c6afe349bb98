# Copyright (c) OpenMMLab. All rights reserved.
"""Add classes by name to a trained SIGN model, without images.

M gets the new classes' embeddings (built the way
``tools/build_class_embeddings.py`` builds a table), C one output per new
class, and C is refit with G frozen on generated features of every class
(seen, old unseen and new), plus real seen features when the config's
training data is reachable: the transfer stage of the paper (eq. 8-9,
``mode='classifier'``) with the grown class list. Then, when the config's
plan has a self-training stage and the training data is reachable, that
stage runs again on the grown class list (``OUT/self_train.py``, through
mmengine's Runner as ``tools/train.py`` runs it): the teacher's pseudo
labels now include the new classes, and the old unseen classes get back
what the refit took from them. The new classes are unseen classes of the
written model. The input checkpoint is only read.

Example (the toy model trained without 'river', configs/sign/
sign_toy_held-out.py)::

    python tools/add_classes.py configs/sign/sign_toy_held-out.py \\
        work_dirs/sign_toy_held-out/iter_1400.pth --classes river \\
        --source data/toy/word_vectors/word2vec_like.txt:word2vec \\
        --source data/toy/word_vectors/fasttext_like.bin:word2vec_binary \\
        --no-default-synonyms --out work_dirs/toy_plus_river
    python tools/test.py work_dirs/toy_plus_river/config.py \\
        work_dirs/toy_plus_river/model.pth

It writes ``OUT/config.py`` (the input config with the grown class list,
split and ``num_classes``), ``OUT/model.pth`` (the final model) and
``OUT/class_embeddings.npz``; ``tools/test.py``, ``init_model`` and
``MMSegInferencer`` take them unchanged. With self-training it also writes
``OUT/refit.pth`` (the model after the refit), ``OUT/self_train.py`` (the
self-training run: ``tools/train.py OUT/self_train.py`` reruns it, with
``--resume`` or a launcher for several GPUs) and its work dir
``OUT/self_train``.

``OUT`` must be new or empty: ``--force`` reuses one, replacing only what
this tool writes there. The logic is :func:`mmseg_sign.apis.add_classes`
and :func:`mmseg_sign.apis.save_grown`.
"""
import argparse
import os.path as osp
import sys

from mmseg_sign.apis import (REFIT_MODES, AddClassesError, add_classes,
                             save_grown)
from mmseg_sign.embeddings.sources import parse_source
from mmseg_sign.utils.cli import CfgOptionsAction


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Add classes by name to a trained SIGN model')
    parser.add_argument(
        'config', help='the config the model was trained '
        'with')
    parser.add_argument('checkpoint', help='its checkpoint (only read)')
    parser.add_argument(
        '--classes',
        nargs='+',
        required=True,
        metavar='NAME',
        help='the classes to add')
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument(
        '--source',
        metavar='PATH[:FORMAT]',
        action='append',
        help='word-vector sources, as for tools/build_class_embeddings.py '
        '(the same sources, in the same order, as the model\'s table)')
    src.add_argument(
        '--embeddings',
        metavar='TABLE.npz',
        help='a class-embedding table holding the new names')
    parser.add_argument(
        '--synonyms',
        metavar='JSON_FILE',
        help='as for tools/build_class_embeddings.py')
    parser.add_argument('--no-default-synonyms', action='store_true')
    parser.add_argument('--no-normalize', action='store_true')
    parser.add_argument('--fasttext-oov', action='store_true')
    parser.add_argument(
        '--out',
        required=True,
        metavar='DIR',
        help='output directory (config.py, model.pth, '
        'class_embeddings.npz); new or empty')
    parser.add_argument(
        '--force',
        action='store_true',
        help='reuse a non-empty --out: replace the files '
        'this tool writes there (and OUT/self_train), keep '
        'the rest')
    parser.add_argument(
        '--iters',
        type=int,
        default=None,
        help='refit iterations (default: the config\'s transfer stage)')
    parser.add_argument(
        '--refit',
        choices=REFIT_MODES,
        default='classifier',
        help="what learns: 'trunk+classifier' (the transfer stage's C "
        "with the shared trunk), 'classifier' (conv_seg: every class's "
        "output), 'new' (the new classes' outputs only; the old classes' "
        'stay exactly as trained)')
    parser.add_argument(
        '--no-real',
        action='store_true',
        help='refit on generated features only, even if '
        'the training data is reachable (and no '
        'self-training)')
    parser.add_argument(
        '--self-train-iters',
        type=int,
        default=None,
        metavar='N',
        help="self-training iterations after the refit (default: the "
        "config's self-training stage; 0: none, OUT/self_train.py is "
        'still written)')
    parser.add_argument(
        '--regrow',
        action='store_true',
        help='grow a model that add_classes already grew')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--device', default='cpu')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='override settings of the config')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        model, cfg = add_classes(
            args.config,
            args.checkpoint,
            args.classes,
            vectors=args.embeddings,
            source=None
            if args.source is None else [parse_source(s) for s in args.source],
            synonyms=args.synonyms,
            normalize=not args.no_normalize,
            use_default_synonyms=not args.no_default_synonyms,
            fasttext_oov=args.fasttext_oov,
            refit=args.refit,
            iters=args.iters,
            real=not args.no_real,
            self_train_iters=args.self_train_iters,
            work_dir=args.out,
            force=args.force,
            seed=args.seed,
            device=args.device,
            cfg_options=args.cfg_options,
            regrow=args.regrow)
        save_grown(model, cfg, args.out, force=args.force)
    except AddClassesError as err:
        sys.exit(f'error: {err}')
    print(f'added {", ".join(args.classes)}: '
          f'{len(model.dataset_meta["classes"])} classes -> '
          f'{osp.abspath(args.out)} (config.py, model.pth, '
          'class_embeddings.npz)')


if __name__ == '__main__':
    main()
