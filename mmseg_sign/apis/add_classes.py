"""Add classes by name to a trained SIGN model, without images.

M gets the new classes' embeddings (built as
:func:`mmseg_sign.embeddings.build_class_embeddings` builds a table), C one
output per new class, and C is refit with E, SIM and G frozen on generated
features of every class plus real seen features when the config's training
data is reachable: the transfer stage's classifier step (eq. 8-9) on the
grown class list. Then, when the config's plan has a self-training stage,
that stage runs again on the grown class list through mmengine's Runner.
The new classes are unseen classes of the grown model.

::

    from mmseg_sign.apis import add_classes, save_grown
    model, cfg = add_classes(
        'configs/sign/sign_toy_held-out.py', 'iter_1000.pth', ['river'],
        source=['word2vec_like.txt', 'fasttext_like.bin'],
        use_default_synonyms=False, work_dir='work_dirs/plus_river')
    save_grown(model, cfg, 'work_dirs/plus_river')
"""
import copy
import json
import logging
import os
import os.path as osp
import pickle
import sys
from collections.abc import Mapping
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmengine.runner.checkpoint import (_load_checkpoint,
                                        _load_checkpoint_to_model,
                                        save_checkpoint, weights_to_cpu)
from mmengine.utils import ProgressBar
from torch import nn

from mmseg.registry import DATASETS, MODELS
from .. import embeddings  # its builder needs gensim: looked up at use
from ..datasets.zero_shot import mask_unseen_labels
from ..embeddings.table import read_class_embeddings, save_class_embeddings
from ..engine.hooks.strict_checkpoint_hook import checkpoint_mismatches
from ..structures.stage_plan import StagePlan, stage_options
from ..utils.state_dict import strip_module_prefix
from .outputs import (AddClassesError, atomic_write, check_out_dir,
                      clear_owned, input_paths)

#: What the refit trains (``refit=``): the transfer stage's C with the
#: shared trunk, ``conv_seg`` (every class's output), or the new classes'
#: outputs only (the old ones stay exactly as trained).
REFIT_MODES = ('trunk+classifier', 'classifier', 'new')


# ------------------------------------------------------------------ inputs
def _read_synonyms(synonyms):
    """A synonym mapping, or the one in a JSON file."""
    if synonyms is None or isinstance(synonyms, Mapping):
        return synonyms
    try:
        with open(synonyms, encoding='utf-8') as f:
            value = json.load(f)
    except json.JSONDecodeError as err:
        raise AddClassesError(
            f'synonyms file {synonyms} is not valid JSON ({err}); it holds '
            'one object, class name -> word(s), e.g. {"tvmonitor": '
            '"tv monitor"}.') from None
    except OSError as err:
        raise AddClassesError(f'cannot read the synonyms file {synonyms}: '
                              f'{err}') from None
    if not isinstance(value, dict):
        raise AddClassesError(
            f'synonyms file {synonyms} holds a {type(value).__name__}; it '
            'must hold one object, class name -> word(s).')
    return value


def new_class_vectors(names, vectors=None, source=None, synonyms=None,
                      normalize=True, use_default_synonyms=True,
                      fasttext_oov=False) -> np.ndarray:
    """``[n, D]`` embeddings of ``names``: ``vectors`` (an array, or a
    class-embedding table ``.npz`` holding the names) or built from
    ``source`` (word-vector sources as for
    :func:`~mmseg_sign.embeddings.build_class_embeddings`)."""
    if (vectors is None) == (source is None):
        raise AddClassesError('give exactly one of `vectors` (an array or a '
                              'table .npz holding the new names) and '
                              '`source` (word-vector sources).')
    try:
        if isinstance(vectors, (str, os.PathLike)):
            table_names, table = read_class_embeddings(vectors)
            index = {n.strip(): i for i, n in enumerate(table_names)}
            missing = [n for n in names if n.strip() not in index]
            if missing:
                raise AddClassesError(
                    f'{vectors} has no rows for {missing}; it holds '
                    f'{", ".join(table_names)}.')
            return table[[index[n.strip()] for n in names]]
        if vectors is not None:
            return np.asarray(vectors, dtype=np.float32)
        return embeddings.build_class_embeddings(
            names, source, synonyms=_read_synonyms(synonyms),
            normalize=normalize, use_default_synonyms=use_default_synonyms,
            fasttext_oov=fasttext_oov)
    except AddClassesError:
        raise
    except (KeyError, ValueError, OSError, pickle.UnpicklingError) as err:
        raise AddClassesError(str(err)) from err


def plan_stage(cfg, name: str) -> Optional[dict]:
    """The first stage ``name`` of the config's plan (options filled in),
    or ``None``."""
    found = StagePlan.from_config(cfg)
    return next((dict(s) for s in found[1] if s['name'] == name),
                None) if found else None


def refit_plan(cfg, iters: Optional[int]):
    """``(iters, stage options, optimizer)``: the transfer stage of the
    config's plan (its weights and length, or ``iters``) and the config's
    ``transfer`` optimizer."""
    transfer = plan_stage(cfg, 'transfer') or dict(name='transfer',
                                                   iters=1000)
    opts = stage_options(0, dict(transfer, mode='classifier'))
    optimizer = (cfg.get('optim_wrapper', None) or {}).get(
        'transfer', {}).get('optimizer',
                            dict(type='Adam', lr=1e-4, betas=(0.5, 0.999)))
    return iters or transfer['iters'], opts, optimizer


def real_batches(cfg, seed: int):
    """An endless iterator over the training data, or ``None`` (the reason
    in the log) when its files cannot be read (the refit then uses
    generated features only; ``real=False`` asks for that). A config whose
    ``train_dataloader`` lacks a key it needs is an error naming the key,
    not a silent fallback."""
    if cfg.get('train_dataloader', None) is None:
        raise AddClassesError(
            'the config has no train_dataloader, which the refit reads its '
            'real batches from; give the config the model was trained with '
            '(or real=False / --no-real to refit on generated features '
            'only).')
    try:
        loader = Runner.build_dataloader(
            copy.deepcopy(cfg.train_dataloader), seed=seed)
        dataset = loader.dataset
        mask_unseen_labels(dataset, insert=True)
        if not len(dataset):
            raise FileNotFoundError('the training dataset is empty')
    except KeyError as err:
        raise AddClassesError(
            'building the config\'s train_dataloader failed on a missing '
            f'key: {err.args[0] if err.args else err}. Fix the config, or '
            'pass real=False (--no-real) to refit on generated features '
            'only.'
        ) from err
    except (OSError, ValueError, AttributeError) as err:
        print_log(f'add_classes: the training data is not reachable ({err}); '
                  'C is refit on generated features only.', logger='current')
        return None

    def endless():
        while True:
            yield from loader

    return endless()


def _dataset_leaves(dataset):
    """The leaf dataset configs of a (concatenated, repeated) dataset."""
    if not isinstance(dataset, Mapping):
        return
    if 'datasets' in dataset:
        for d in dataset['datasets']:
            yield from _dataset_leaves(d)
    elif dataset.get('type') in ('RepeatDataset', 'ClassBalancedDataset'):
        yield from _dataset_leaves(dataset.get('dataset'))
    else:
        yield dataset


def unlisted_classes(cfg, names: Sequence[str]) -> dict:
    """``{dataset type: [names]}``: the ``names`` that a dataset of the
    config's loaders does not list in its ``METAINFO`` (mmseg refuses such a
    class list when it builds the dataset)."""
    found = {}
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        loader = cfg.get(key, None)
        if not isinstance(loader, Mapping):
            continue
        for leaf in _dataset_leaves(loader.get('dataset')):
            dtype = leaf.get('type')
            if dtype == 'ZeroShotDataset':
                inner = leaf.get('dataset')
                dtype = inner.get('type') if isinstance(
                    inner, Mapping) else leaf.get('dataset_type')
            cls = DATASETS.get(dtype) if isinstance(dtype, str) else dtype
            classes = getattr(cls, 'METAINFO', {}).get('classes') \
                if isinstance(cls, type) else None
            if classes is None:
                continue
            missing = [n for n in names if n not in classes]
            if missing:
                found[cls.__name__] = missing
    return found


# ------------------------------------------------------------------- model
def _load_strict(model: nn.Module, checkpoint: str, config_name: str):
    """Load ``checkpoint`` into ``model`` (the project's safe loader);
    a mismatch names the keys and the fix instead of torch's dump."""
    try:
        ckpt = _load_checkpoint(checkpoint, map_location='cpu')
    except (OSError, RuntimeError, EOFError, ValueError,
            pickle.UnpicklingError) as err:
        raise AddClassesError(
            str(err) if str(checkpoint) in str(err) else
            f'cannot read the checkpoint {checkpoint}: {err}') from err
    if not isinstance(ckpt, dict):
        raise AddClassesError(f'{checkpoint} holds a {type(ckpt).__name__}, '
                              'not a checkpoint dict.')
    problems = checkpoint_mismatches(  # the refit runs G: no published one
        model, ckpt, ignore_shapes=('class_embedding', ), inference=False)
    if problems:
        saved = strip_module_prefix(ckpt.get('state_dict', ckpt)).get(
            'decode_head.conv_seg.weight')
        hint = ''
        if saved is not None and hasattr(model, 'decode_head') and \
                saved.shape[0] != model.decode_head.num_classes:
            hint = (f' The checkpoint has {saved.shape[0]} classes, the '
                    f'config {model.decode_head.num_classes}.')
        raise AddClassesError(
            f'{checkpoint} does not fit the model that {config_name} '
            f'builds: {"; ".join(problems)}.{hint} Give the config the '
            'model was trained with (its run dumps it into the work dir, '
            'e.g. work_dirs/NAME/NAME.py; a run changed by --cfg-options '
            'differs from the file in configs/).')
    _load_checkpoint_to_model(model, ckpt, strict=True)
    return ckpt


def refit_classifier(model, iters: int, opts: dict, optimizer_cfg: dict,
                     batches, refit: str = 'classifier', num_new: int = 0,
                     pixels: int = 4096) -> None:
    """The transfer stage's classifier step (eq. 9) ``iters`` times: E, SIM
    and G frozen; C learns from real seen features (``batches``) and
    generated features of every class. ``refit``: one of
    :data:`REFIT_MODES`."""
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
        nn.ModuleList(modules),
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


# ----------------------------------------------------------------- configs
def _set_split(dataset, classes, unseen) -> None:
    """Give a dataset config (and wrapped ones) the grown class list."""
    if not isinstance(dataset, dict):
        return
    if 'datasets' in dataset:  # ConcatDataset
        for d in dataset['datasets']:
            _set_split(d, classes, unseen)
        return
    if dataset.get('type') in ('RepeatDataset', 'ClassBalancedDataset'):
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


def grown_config(cfg, classes, unseen, table_path) -> Config:
    """The config with the grown class list: ``num_classes``, the table,
    the split of the head, the datasets and the evaluators."""
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


def self_train_config(cfg, stage: dict, load_from: str, work_dir: str,
                      seed: int) -> Config:
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


def new_palette(count: int, seed: int = 0) -> list:
    """``count`` random colours for the added classes."""
    rng = np.random.default_rng(seed)
    return [list(map(int, rng.integers(0, 256, 3))) for _ in range(count)]


def _save_model(model, meta, path) -> None:
    """An inference checkpoint (``meta`` and the weights, on the CPU),
    written atomically."""
    ckpt = dict(meta=meta, state_dict=weights_to_cpu(model.state_dict()))
    atomic_write(path, lambda tmp: save_checkpoint(ckpt, tmp))


def _dump_config(cfg: Config, path: str) -> None:
    atomic_write(path, cfg.dump)


def _check_count(name, value):
    if value is not None and (isinstance(value, bool) or
                              not isinstance(value, int) or value < 0):
        raise AddClassesError(f'{name} must be an integer >= 0 (or None), '
                              f'got {value!r}.')


# --------------------------------------------------------------------- API
def add_classes(model_or_config: Union[str, Config, nn.Module],
                checkpoint: Optional[str],
                names: Sequence[str],
                vectors=None,
                *,
                source=None,
                synonyms=None,
                normalize: bool = True,
                use_default_synonyms: bool = True,
                fasttext_oov: bool = False,
                refit: str = 'classifier',
                iters: Optional[int] = None,
                real: bool = True,
                self_train_iters: Optional[int] = None,
                work_dir: Optional[str] = None,
                force: bool = False,
                seed: int = 0,
                device: str = 'cpu',
                cfg_options: Optional[dict] = None
                ) -> Tuple[nn.Module, Config]:
    """Add the classes ``names`` to a trained SIGN model.

    Args:
        model_or_config: the config the model was trained with (a path or
            a ``Config``), or a model (``init_model``'s: its ``cfg`` is the
            config; it is copied, not changed).
        checkpoint (str, optional): the model's checkpoint (only read);
            ``None`` with a model that is already loaded.
        names (Sequence[str]): the classes to add.
        vectors: their embeddings, ``[n, D]`` (the table's width), or a
            class-embedding table ``.npz`` holding the names.
        source: instead of ``vectors``, word-vector sources as for
            :func:`~mmseg_sign.embeddings.build_class_embeddings` (the
            model's table's sources, in the same order); ``synonyms`` (a
            mapping or a JSON file), ``normalize``,
            ``use_default_synonyms`` and ``fasttext_oov`` as there.
        refit (str): what the refit trains, one of :data:`REFIT_MODES`.
        iters (int, optional): refit iterations (default: the transfer
            stage's).
        real (bool): refit on real seen features too when the training
            data is reachable (and self-train); ``False``: generated
            features only, no self-training.
        self_train_iters (int, optional): iterations of the plan's
            self-training stage on the grown class list (default: the
            stage's; 0: none).
        work_dir (str, optional): where self-training writes
            (``class_embeddings.npz``, ``refit.pth``, ``self_train.py``
            and the run's work dir ``self_train``); needed when it runs.
            Checked before any work, as :func:`save_grown` checks ``out``.
        force (bool): reuse a non-empty ``work_dir`` (its files of this
            tool are replaced, the rest kept).
        seed (int): seeds torch and numpy, the loader and self-training.
        device (str): where the refit runs.
        cfg_options (dict, optional): overrides of the config.

    Returns:
        ``(model, config)``: the grown model (``model.cfg`` is ``config``,
        ``model.dataset_meta`` has the grown classes, palette and split)
        and the grown config. :func:`save_grown` writes them.

    Raises:
        AddClassesError: what is wrong with the inputs, before any work.
    """
    if isinstance(names, str):
        names = [names]
    names = [str(n) for n in names]
    if refit not in REFIT_MODES:
        raise AddClassesError(f'refit must be one of {REFIT_MODES}, got '
                              f'{refit!r}.')
    _check_count('iters', iters)
    _check_count('self_train_iters', self_train_iters)
    if isinstance(model_or_config, nn.Module):
        model = copy.deepcopy(model_or_config)
        cfg = getattr(model_or_config, 'cfg', None)
        if cfg is None:
            raise AddClassesError(
                'the model has no `cfg`: pass the config instead (or a '
                'model from mmseg.apis.init_model).')
        cfg, config_name = copy.deepcopy(cfg), 'the model\'s config'
    else:
        model = None
        cfg = Config.fromfile(model_or_config) if isinstance(
            model_or_config, (str, os.PathLike)) else copy.deepcopy(
                model_or_config)
        config_name = str(model_or_config) if isinstance(
            model_or_config, (str, os.PathLike)) else (
                cfg.filename or 'the config')
        if checkpoint is None:
            raise AddClassesError('a config needs its checkpoint.')
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    inputs = input_paths(cfg.filename, checkpoint, source, synonyms,
                         vectors if isinstance(vectors,
                                               (str, os.PathLike)) else None)
    if work_dir is not None:
        check_out_dir(work_dir, inputs, force)
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    if seed is not None:
        torch.manual_seed(seed)
        np.random.seed(seed)

    if model is None:
        model = MODELS.build(cfg.model)
        ckpt = _load_strict(model, checkpoint, config_name)
        meta = copy.deepcopy(ckpt.get('meta', {}))
    else:
        meta = {}
        if checkpoint is not None:
            meta = copy.deepcopy(_load_strict(model, checkpoint,
                                              config_name).get('meta', {}))
        meta.setdefault('dataset_meta',
                        copy.deepcopy(getattr(model, 'dataset_meta', None)))
    head = getattr(model, 'decode_head', None)
    if not hasattr(head, 'add_classes'):
        raise AddClassesError(
            f'{config_name}: the decode head is {type(head).__name__}; '
            'classes are added to a SIGNHead.')
    dataset_meta = dict(meta.get('dataset_meta') or {})
    if head.class_names is None and dataset_meta.get('classes'):
        head.class_names = tuple(dataset_meta['classes'])
    if not bool(head.unseen_mask.any()) and dataset_meta.get(
            'unseen_classes'):
        head.set_class_split(dataset_meta['unseen_classes'])
    new = new_class_vectors(names, vectors, source, synonyms, normalize,
                            use_default_synonyms, fasttext_oov)
    try:
        head.add_classes(names, new)
    except ValueError as err:
        raise AddClassesError(str(err)) from err
    model.to(device)
    classes = head.class_names
    unseen = [c for c, u in zip(classes, head.unseen_mask.tolist()) if u]
    print_log(f'add_classes: {len(classes)} classes, unseen {unseen}',
              logger='current')

    iters, opts, optimizer = refit_plan(cfg, iters)
    batches = real_batches(cfg, seed) if real else None
    stage = plan_stage(cfg, 'self_train')
    if stage is None and self_train_iters:
        print_log(f'add_classes: {config_name} has no self-training stage; '
                  'self_train_iters is ignored.', logger='current')
    if stage is not None and self_train_iters:
        stage['iters'] = self_train_iters
    # (self_train_iters=0: none now; save_grown writes the plan's stage)
    self_train = stage is not None and self_train_iters != 0 and \
        batches is not None
    unlisted = unlisted_classes(cfg, names)
    if self_train and unlisted:
        raise AddClassesError(
            'self-training reads the training data on the grown class '
            'list, but ' + '; '.join(
                f'{t} does not list {m}' for t, m in unlisted.items()) +
            ' (mmseg builds a dataset only with classes of its METAINFO). '
            'Add a class the dataset lists (train without it: '
            "held_out_classes=['NAME'], as configs/sign/"
            'sign_toy_held-out.py), or skip self-training '
            '(self_train_iters=0, tools/add_classes.py --self-train-iters '
            '0) for a model used through init_model / MMSegInferencer.')
    if self_train and work_dir is None:
        raise AddClassesError(
            f'{config_name} has a self-training stage ({stage["iters"]} '
            'iterations), which writes checkpoints: give work_dir, or '
            'self_train_iters=0 to refit only.')
    if unlisted:
        print_log(
            'add_classes: ' + '; '.join(
                f'{t} does not list {m}' for t, m in unlisted.items()) +
            ': the grown config cannot build those datasets (mmseg refuses '
            'a class outside METAINFO), so it serves inference '
            '(init_model, MMSegInferencer), not tools/test.py or training.',
            logger='current', level=logging.WARNING)

    refit_classifier(model, iters, opts, optimizer, batches, refit,
                     num_new=len(names))
    del batches  # its loader's workers

    palette = list(dataset_meta.get('palette') or [])
    palette += new_palette(len(classes) - len(palette), seed or 0)
    dataset_meta.update(classes=tuple(classes), palette=palette,
                        unseen_classes=tuple(unseen),
                        seen_classes=tuple(c for c in classes
                                           if c not in unseen))
    meta.update(dataset_meta=dataset_meta, sign_added_classes=tuple(names))
    if checkpoint is not None:
        meta['sign_added_from'] = osp.abspath(checkpoint)
    meta.pop('hook_msgs', None)
    table = None
    if self_train:  # into work_dir, checked above
        out = osp.abspath(work_dir)
        if force:
            clear_owned(out)
        table = osp.join(out, 'class_embeddings.npz')
        save_class_embeddings(table, list(classes),
                              head.class_embedding.cpu().numpy())
    grown = grown_config(cfg, classes, unseen, table)
    info = dict(meta=meta, inputs=inputs, stage=stage, seed=seed,
                self_trained=False, unlisted=unlisted,
                # the directory self-training prepared (save_grown may
                # write there without force)
                work_dir=osp.realpath(work_dir) if self_train else None)
    if self_train:
        _save_model(model, meta, osp.join(out, 'refit.pth'))
        st_cfg = self_train_config(grown, stage, osp.join(out, 'refit.pth'),
                                   osp.join(out, 'self_train'), seed)
        _dump_config(st_cfg, osp.join(out, 'self_train.py'))
        print_log(f'add_classes: self-training for {stage["iters"]} '
                  'iterations on the grown class list '
                  f'({osp.join(out, "self_train.py")})', logger='current')
        runner = Runner.from_cfg(st_cfg)
        runner.train()
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        info['self_trained'] = True
    elif stage is not None and self_train_iters != 0:
        print_log('add_classes: no self-training: it needs the training '
                  'data (real=False / --no-real, or not reachable).',
                  logger='current')
    model.eval()
    model.cfg = grown
    model.dataset_meta = copy.deepcopy(dataset_meta)
    model.add_classes_info = info
    return model, grown


def save_grown(model: nn.Module, config: Config, out: str,
               force: bool = False) -> dict:
    """Write what :func:`add_classes` returned into the directory ``out``:
    ``config.py`` (the grown config, its table path ``out``'s),
    ``model.pth`` (weights and ``meta.dataset_meta``) and
    ``class_embeddings.npz``; when the plan's self-training did not run,
    also ``refit.pth`` (the same model) and ``self_train.py`` (that stage
    from ``refit.pth``, work dir ``out/self_train``: ``tools/train.py``
    runs it later). Every file is written atomically.

    ``out`` is checked first: not a file, no input of :func:`add_classes`
    among the files written (real paths), and empty unless it is the
    ``work_dir`` where ``add_classes`` self-trained, or ``force`` (which
    replaces the files listed above and ``self_train/``, and keeps the
    rest).

    Returns:
        dict: name → path of each file written.
    """
    info = getattr(model, 'add_classes_info', None)
    if info is None:
        raise AddClassesError('save_grown takes the model that add_classes '
                              'returned (model.add_classes_info is '
                              'missing).')
    own = info['work_dir'] is not None and \
        osp.realpath(out) == info['work_dir']
    check_out_dir(out, info['inputs'], force or own)
    out = osp.abspath(out)
    if force and not own:
        clear_owned(out)
    head = model.decode_head
    written = dict(
        class_embeddings=save_class_embeddings(
            osp.join(out, 'class_embeddings.npz'), list(head.class_names),
            head.class_embedding.cpu().numpy()))
    config = copy.deepcopy(config)
    config.model.decode_head.class_embeddings = \
        written['class_embeddings']
    written['config'] = osp.join(out, 'config.py')
    _dump_config(config, written['config'])
    stage = info['stage']
    if stage is not None and not info['self_trained']:
        if info['unlisted']:
            print_log('add_classes: self_train.py is not written: the '
                      'training dataset does not list the added classes.',
                      logger='current')
        else:
            written['refit'] = osp.join(out, 'refit.pth')
            _save_model(model, info['meta'], written['refit'])
            written['self_train'] = osp.join(out, 'self_train.py')
            _dump_config(
                self_train_config(config, stage, written['refit'],
                                  osp.join(out, 'self_train'), info['seed']),
                written['self_train'])
            print_log('add_classes: no self-training run; tools/train.py '
                      f'{written["self_train"]} runs it.', logger='current')
    written['model'] = osp.join(out, 'model.pth')
    _save_model(model, info['meta'], written['model'])
    return written
