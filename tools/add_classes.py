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
        work_dirs/sign_toy_held-out/iter_1000.pth --classes river \\
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
"""
import argparse
import copy
import json
import os
import os.path as osp
import pickle
import sys

import numpy as np
import torch
from mmengine.config import Config, DictAction
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.registry import init_default_scope
from mmengine.runner import Runner, load_checkpoint
from mmengine.runner.checkpoint import save_checkpoint, weights_to_cpu
from mmengine.utils import ProgressBar

import mmseg_sign  # noqa: F401
from mmseg.registry import MODELS
from mmseg_sign.embeddings import (build_class_embeddings,
                                   read_class_embeddings,
                                   save_class_embeddings)
from mmseg_sign.models.segmentors.stages import stage_options

sys.path.insert(0, osp.dirname(osp.abspath(__file__)))
from build_class_embeddings import parse_source  # noqa: E402


REFIT = ('trunk+classifier', 'classifier', 'new')


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Add classes by name to a trained SIGN model')
    parser.add_argument('config', help='the config the model was trained '
                        'with')
    parser.add_argument('checkpoint', help='its checkpoint (only read)')
    parser.add_argument('--classes', nargs='+', required=True,
                        metavar='NAME', help='the classes to add')
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument(
        '--source', metavar='PATH[:FORMAT]', action='append',
        help='word-vector sources, as for tools/build_class_embeddings.py '
        '(the same sources, in the same order, as the model\'s table)')
    src.add_argument('--embeddings', metavar='TABLE.npz',
                     help='a class-embedding table holding the new names')
    parser.add_argument('--synonyms', metavar='JSON_FILE',
                        help='as for tools/build_class_embeddings.py')
    parser.add_argument('--no-default-synonyms', action='store_true')
    parser.add_argument('--no-normalize', action='store_true')
    parser.add_argument('--fasttext-oov', action='store_true')
    parser.add_argument('--out', required=True, metavar='DIR',
                        help='output directory (config.py, model.pth, '
                        'class_embeddings.npz)')
    parser.add_argument(
        '--iters', type=int, default=None,
        help='refit iterations (default: the config\'s transfer stage)')
    parser.add_argument(
        '--refit', choices=REFIT, default='classifier',
        help="what learns: 'trunk+classifier' (the transfer stage's C "
        "with the shared trunk), 'classifier' (conv_seg: every class's "
        "output), 'new' (the new classes' outputs only; the old classes' "
        'stay exactly as trained)')
    parser.add_argument('--no-real', action='store_true',
                        help='refit on generated features only, even if '
                        'the training data is reachable (and no '
                        'self-training)')
    parser.add_argument(
        '--self-train-iters', type=int, default=None, metavar='N',
        help="self-training iterations after the refit (default: the "
        "config's self-training stage; 0: none, OUT/self_train.py is "
        'still written)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override settings of the config')
    return parser.parse_args(argv)


def new_class_vectors(args, names):
    """``[n, D]`` embeddings of ``names`` from ``--embeddings`` or
    ``--source`` (the builder's checks: missing words, unreadable or unsafe
    files)."""
    if args.embeddings:
        table_names, table = read_class_embeddings(args.embeddings)
        index = {n.strip(): i for i, n in enumerate(table_names)}
        missing = [n for n in names if n.strip() not in index]
        if missing:
            raise ValueError(
                f'{args.embeddings} has no rows for {missing}; it holds '
                f'{", ".join(table_names)}.')
        return table[[index[n.strip()] for n in names]]
    synonyms = None
    if args.synonyms:
        with open(args.synonyms, encoding='utf-8') as f:
            synonyms = json.load(f)
    return build_class_embeddings(
        names, [parse_source(s) for s in args.source], synonyms=synonyms,
        normalize=not args.no_normalize,
        use_default_synonyms=not args.no_default_synonyms,
        fasttext_oov=args.fasttext_oov)


def plan_stage(cfg, name):
    """The stage ``name`` of the config's plan (``SIGNStageHook``), or
    ``None``."""
    for hook in cfg.get('custom_hooks', []):
        if hook.get('type') == 'SIGNStageHook':
            return next((dict(s) for s in hook.get('stages', [])
                         if s.get('name') == name), None)
    return None


def refit_plan(cfg, iters):
    """The transfer stage of the config's plan (its weights and length)
    and the config's ``transfer`` optimizer."""
    transfer = plan_stage(cfg, 'transfer') or dict(name='transfer',
                                                   iters=1000)
    opts = stage_options(0, dict(transfer, mode='classifier'))
    optimizer = cfg.get('optim_wrapper', {}).get('transfer', {}).get(
        'optimizer', dict(type='Adam', lr=1e-4, betas=(0.5, 0.999)))
    return iters or transfer['iters'], opts, optimizer


def real_batches(cfg, seed):
    """An endless iterator over the training data, or ``None`` (with the
    reason in the log) when it cannot be read."""
    try:
        loader = Runner.build_dataloader(
            copy.deepcopy(cfg.train_dataloader), seed=seed)
        dataset = loader.dataset
        if hasattr(dataset, 'mask_unseen_labels'):
            dataset.mask_unseen_labels()
        if not len(dataset):
            raise FileNotFoundError('the training dataset is empty')
    except (FileNotFoundError, OSError, KeyError, ValueError) as err:
        print_log(f'add_classes: the training data is not reachable ({err}); '
                  'C is refit on generated features only.', logger='current')
        return None

    def endless():
        while True:
            yield from loader

    return endless()


def refit_classifier(model, iters, opts, optimizer_cfg, batches,
                     refit='classifier', num_new=0, pixels=4096):
    """The transfer stage's classifier step (eq. 9) ``iters`` times: E, SIM
    and G frozen; C learns from real seen features (``batches``) and
    generated features of every class. ``refit``: see ``--refit``."""
    from mmengine.optim import build_optim_wrapper
    head = model.decode_head
    modules = [head.conv_seg]
    if refit == 'trunk+classifier' and head.classifier == 'shared_trunk':
        modules.append(head.trunk)
    for p in model.parameters():
        p.requires_grad_(False)
    for m in modules:
        m.requires_grad_(True)
    optim = build_optim_wrapper(
        torch.nn.ModuleList(modules),
        dict(type='OptimWrapper', optimizer=dict(optimizer_cfg)))
    conv = head.conv_seg
    old = conv.out_channels - num_new
    kept = [conv.weight[:old].detach().clone(),
            conv.bias[:old].detach().clone()]
    model.eval()
    head.train()  # dropout before C and in G, as in the transfer stage
    like = head.class_embedding
    bar = ProgressBar(iters)
    for it in range(iters):
        if batches is not None:
            data = model.data_preprocessor(next(batches), True)
            with torch.no_grad():
                feats = model.extract_feat(data['inputs'])
            losses = head.loss_transfer(feats, data['data_samples'],
                                        opts['real_weight'],
                                        opts['synth_weight'])
        else:
            losses = dict(loss_ce_synth=head.loss_synthetic(
                pixels, like, opts['synth_weight']))
        loss = sum(losses.values())
        if not torch.isfinite(loss):
            raise FloatingPointError(f'add_classes: non-finite loss at '
                                     f'iteration {it + 1}: {losses}')
        optim.update_params(loss)
        if refit == 'new':  # the old outputs stay as trained
            with torch.no_grad():
                conv.weight[:old] = kept[0]
                conv.bias[:old] = kept[1]
        bar.update()
    sys.stdout.write('\n')
    for p in model.parameters():
        p.requires_grad_(True)
    model.eval()


def _set_split(dataset, classes, unseen):
    """Give a dataset config (and wrapped ones) the grown class list."""
    if not isinstance(dataset, dict):
        return
    if 'datasets' in dataset:  # ConcatDataset
        for d in dataset['datasets']:
            _set_split(d, classes, unseen)
        return
    if dataset.get('type') == 'RepeatDataset':
        _set_split(dataset['dataset'], classes, unseen)
        return
    for d in (dataset, dataset.get('dataset')):
        if isinstance(d, dict):
            d.pop('held_out_classes', None)
            d.pop('seen_classes', None)
            d.pop('unseen_classes', None)
            if isinstance(d.get('metainfo'), dict):
                for key in ('held_out_classes', 'seen_classes',
                            'unseen_classes', 'classes'):
                    d['metainfo'].pop(key, None)
    dataset['metainfo'] = dict(dataset.get('metainfo') or {},
                               classes=list(classes),
                               unseen_classes=list(unseen))


def grown_config(cfg, classes, unseen, table_path):
    cfg = copy.deepcopy(cfg)
    head = cfg.model.decode_head
    head.num_classes = len(classes)
    head.class_embeddings = table_path
    head.pop('held_out_classes', None)
    if head.get('unseen_classes') is not None:
        head.unseen_classes = list(unseen)
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        if cfg.get(key):
            _set_split(cfg[key].get('dataset'), classes, unseen)
    for key in ('val_evaluator', 'test_evaluator'):
        metrics = cfg.get(key)
        for metric in metrics if isinstance(metrics, list) else [metrics]:
            if isinstance(metric, dict) and metric.get('unseen_classes'):
                metric['unseen_classes'] = list(unseen)
    cfg.load_from = None
    cfg.resume = False
    return cfg


def self_train_config(cfg, stage, load_from, work_dir, seed):
    """The grown config with a plan of one self-training ``stage`` that
    starts from ``load_from`` (the refit model)."""
    cfg = copy.deepcopy(cfg)
    hooks = [h for h in cfg.get('custom_hooks', [])
             if h.get('type') != 'SIGNStageHook']
    cfg.custom_hooks = [dict(type='SIGNStageHook', stages=[stage]), *hooks]
    cfg.load_from = load_from
    cfg.resume = False
    cfg.work_dir = work_dir
    cfg.randomness = dict(cfg.get('randomness') or {}, seed=seed)
    return cfg


def save_model(model, meta, path):
    """An inference checkpoint: ``meta`` and the weights, on the CPU."""
    save_checkpoint(dict(meta=meta,
                         state_dict=weights_to_cpu(model.state_dict())), path)


def new_palette(count, seed=0):
    """``count`` random colours for the added classes."""
    rng = np.random.default_rng(seed)
    return [list(map(int, rng.integers(0, 256, 3))) for _ in range(count)]


def main(argv=None):
    args = parse_args(argv)
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    if osp.abspath(args.out) == osp.dirname(osp.abspath(args.checkpoint)) \
            and osp.basename(args.checkpoint) == 'model.pth':
        sys.exit('error: --out would overwrite the input checkpoint.')
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    model = MODELS.build(cfg.model)
    checkpoint = load_checkpoint(model, args.checkpoint, map_location='cpu',
                                 strict=True)
    head = model.decode_head
    if not hasattr(head, 'add_classes'):
        sys.exit(f'error: {args.config}: the decode head is '
                 f'{type(head).__name__}; classes are added to a SIGNHead.')
    meta = copy.deepcopy(checkpoint.get('meta', {}))
    dataset_meta = dict(meta.get('dataset_meta') or {})
    if head.class_names is None and dataset_meta.get('classes'):
        head.class_names = tuple(dataset_meta['classes'])
    if not bool(head.unseen_mask.any()) and dataset_meta.get(
            'unseen_classes'):
        head.set_class_split(dataset_meta['unseen_classes'])
    try:
        vectors = new_class_vectors(args, args.classes)
        head.add_classes(args.classes, vectors)
    except (KeyError, ValueError, OSError, pickle.UnpicklingError) as err:
        sys.exit(f'error: {err}')
    model.to(args.device)
    classes = head.class_names
    unseen = [c for c, u in zip(classes, head.unseen_mask.tolist()) if u]
    print_log(f'add_classes: {len(classes)} classes, unseen {unseen}',
              logger='current')

    iters, opts, optimizer = refit_plan(cfg, args.iters)
    batches = None if args.no_real else real_batches(cfg, args.seed)
    refit_classifier(model, iters, opts, optimizer, batches, args.refit,
                     num_new=len(args.classes))
    have_data = batches is not None
    del batches  # its loader's workers

    os.makedirs(args.out, exist_ok=True)
    table_path = osp.abspath(osp.join(args.out, 'class_embeddings.npz'))
    save_class_embeddings(table_path, list(classes),
                          head.class_embedding.cpu().numpy())
    palette = list(dataset_meta.get('palette') or [])
    palette += new_palette(len(classes) - len(palette), args.seed)
    dataset_meta.update(classes=tuple(classes), palette=palette,
                        unseen_classes=tuple(unseen),
                        seen_classes=tuple(c for c in classes
                                           if c not in unseen))
    meta.update(dataset_meta=dataset_meta,
                sign_added_classes=tuple(args.classes),
                sign_added_from=osp.abspath(args.checkpoint))
    meta.pop('hook_msgs', None)
    out = osp.abspath(args.out)
    grown = grown_config(cfg, classes, unseen, table_path)
    grown.dump(osp.join(out, 'config.py'))
    stage = plan_stage(cfg, 'self_train')
    if stage is None:
        if args.self_train_iters:
            print_log(f'add_classes: {args.config} has no self-training '
                      'stage; --self-train-iters is ignored.',
                      logger='current')
        save_model(model, meta, osp.join(out, 'model.pth'))
    else:
        save_model(model, meta, osp.join(out, 'refit.pth'))
        if args.self_train_iters:
            stage['iters'] = args.self_train_iters
        st_cfg = self_train_config(
            grown, stage, osp.join(out, 'refit.pth'),
            osp.join(out, 'self_train'), args.seed)
        st_cfg.dump(osp.join(out, 'self_train.py'))
        if args.self_train_iters == 0:
            print_log('add_classes: no self-training (--self-train-iters '
                      f'0); tools/train.py {out}/self_train.py runs it.',
                      logger='current')
        elif have_data:
            print_log(f'add_classes: self-training for {stage["iters"]} '
                      'iterations on the grown class list '
                      f'({osp.join(out, "self_train.py")})',
                      logger='current')
            runner = Runner.from_cfg(st_cfg)
            runner.train()
            model = runner.model.module if is_model_wrapper(
                runner.model) else runner.model
        else:
            print_log('add_classes: no self-training: it needs the '
                      'training data (--no-real, or not reachable).',
                      logger='current')
        save_model(model, meta, osp.join(out, 'model.pth'))
    print(f'added {", ".join(args.classes)}: {len(classes)} classes -> '
          f'{osp.abspath(args.out)} (config.py, model.pth, '
          'class_embeddings.npz)')


if __name__ == '__main__':
    main()
