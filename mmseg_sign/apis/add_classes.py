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
import logging
import os
import os.path as osp
import pickle
from typing import Optional, Sequence, Tuple, Union

import numpy as np
import torch
from mmengine.config import Config
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.registry import init_default_scope
from mmengine.runner import Runner
from mmengine.runner.checkpoint import (_load_checkpoint,
                                        _load_checkpoint_to_model)
from mmseg.registry import MODELS
from torch import nn

from ..embeddings.table import save_class_embeddings
from ..engine.checkpoint_checks import checkpoint_mismatches
from ..utils.cli import check_option_keys
from ..utils.state_dict import strip_module_prefix
from .class_vectors import new_class_vectors
from .grown_config import (_dump_config, check_not_grown, grown_config,
                           new_palette, self_train_config, unlisted_classes)
from .outputs import (AddClassesError, check_count, check_device,
                      check_out_dir, clear_owned, input_paths, save_model)
from .refit import (check_refit_split, plan_stage, real_batches,
                    refit_classifier, refit_plan)

#: What the refit trains (``refit=``): the transfer stage's C with the
#: shared trunk, ``conv_seg`` (every class's output), or the new classes'
#: outputs only (the old ones stay exactly as trained).
REFIT_MODES = ('trunk+classifier', 'classifier', 'new')


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
        model,
        ckpt,
        ignore_shapes=('class_embedding', ),
        inference=False)
    if problems:
        saved = strip_module_prefix(ckpt.get(
            'state_dict', ckpt)).get('decode_head.conv_seg.weight')
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
                cfg_options: Optional[dict] = None,
                regrow: bool = False) -> Tuple[nn.Module, Config]:
    """Add the classes ``names`` to a trained SIGN model.

    Args:
        model_or_config: the config the model was trained with (a path or
            a ``Config``), or a model (``init_model``'s: its ``cfg`` is the
            config; it is copied, not changed).
        checkpoint (str, optional): the model's checkpoint (only read);
            ``None`` with a model that is already loaded.
        names (Sequence[str]): the classes to add.
        vectors: their ``[n, D]`` (the table's width), or a
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
        regrow (bool): grow a model that add_classes already grew (refused
            by default: see docs/add_classes.md, "Growing twice").

    Returns:
        ``(model, config)``: the grown model (``model.cfg`` is ``config``,
        ``model.dataset_meta`` has the grown classes, palette and split)
        and the grown config. :func:`save_grown` writes them.

    Raises:
        AddClassesError: what is wrong with the inputs, before any work.
    """
    if isinstance(names, str):
        names = [names]
    bad = [n for n in names if not isinstance(n, str) or not n.strip()]
    if bad:
        raise AddClassesError(f'names must be class names (non-empty '
                              f'strings), got {bad} in {list(names)}.')
    if refit not in REFIT_MODES:
        raise AddClassesError(f'refit must be one of {REFIT_MODES}, got '
                              f'{refit!r}.')
    check_count('iters', iters)
    check_count('self_train_iters', self_train_iters)
    check_device(device)
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
            model_or_config,
            (str, os.PathLike)) else copy.deepcopy(model_or_config)
        config_name = str(model_or_config) if isinstance(
            model_or_config,
            (str, os.PathLike)) else (cfg.filename or 'the config')
        if checkpoint is None:
            raise AddClassesError('a config needs its checkpoint.')
    if cfg_options:
        try:  # a misspelt key would be kept in the grown config, unread
            check_option_keys(cfg, cfg_options)
        except SystemExit as err:
            raise AddClassesError(str(err).replace('error: ', '', 1)) from None
        cfg.merge_from_dict(cfg_options)
    inputs = input_paths(
        cfg.filename, checkpoint, source, synonyms,
        vectors if isinstance(vectors, (str, os.PathLike)) else None)
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
            meta = copy.deepcopy(
                _load_strict(model, checkpoint, config_name).get('meta', {}))
        meta.setdefault('dataset_meta',
                        copy.deepcopy(getattr(model, 'dataset_meta', None)))
    check_not_grown(meta, checkpoint, names, regrow)
    head = getattr(model, 'decode_head', None)
    if not hasattr(head, 'add_classes') or \
            getattr(head, 'generator', None) is None:
        raise AddClassesError(
            f'{config_name}: the decode head is {type(head).__name__}; '
            'classes are added to a SIGNHead, whose generator refits the '
            'classifier on the new classes (SIGN, CaGNet and ZS3Net '
            'configs).')
    dataset_meta = dict(meta.get('dataset_meta') or {})
    if head.class_names is None and dataset_meta.get('classes'):
        head.class_names = tuple(dataset_meta['classes'])
    if not bool(head.unseen_mask.any()) and dataset_meta.get('unseen_classes'):
        head.set_class_split(dataset_meta['unseen_classes'])
    check_refit_split(cfg, head, config_name, checkpoint)
    new = new_class_vectors(names, vectors, source, synonyms, normalize,
                            use_default_synonyms, fasttext_oov)
    try:
        head.add_classes(names, new)
    except ValueError as err:
        raise AddClassesError(str(err)) from err
    model.to(device)
    classes = head.class_names
    unseen = [c for c, u in zip(classes, head.unseen_mask.tolist()) if u]
    print_log(
        f'add_classes: {len(classes)} classes, unseen {unseen}',
        logger='current')

    iters, opts, optimizer = refit_plan(cfg, iters)
    batches = real_batches(cfg, seed) if real else None
    stage = plan_stage(cfg, 'self_train')
    if stage is None and self_train_iters:
        print_log(
            f'add_classes: {config_name} has no self-training stage; '
            'self_train_iters is ignored.',
            logger='current')
    if stage is not None and self_train_iters:
        stage['iters'] = self_train_iters
    # (self_train_iters=0: none now; save_grown writes the plan's stage)
    self_train = stage is not None and self_train_iters != 0 and \
        batches is not None
    unlisted = unlisted_classes(cfg, names)
    if self_train and unlisted:
        raise AddClassesError(
            'self-training reads the training data on the grown class '
            'list, but ' + '; '.join(f'{t} does not list {m}'
                                     for t, m in unlisted.items()) +
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
            'add_classes: ' + '; '.join(f'{t} does not list {m}'
                                        for t, m in unlisted.items()) +
            ': the grown config cannot build those datasets (mmseg refuses '
            'a class outside METAINFO), so it serves inference '
            '(init_model, MMSegInferencer), not tools/test.py or training.',
            logger='current',
            level=logging.WARNING)

    refit_classifier(
        model, iters, opts, optimizer, batches, refit, num_new=len(names))
    del batches  # its loader's workers

    palette = list(dataset_meta.get('palette') or [])
    palette += new_palette(len(classes) - len(palette), seed or 0)
    dataset_meta.update(
        classes=tuple(classes),
        palette=palette,
        unseen_classes=tuple(unseen),
        seen_classes=tuple(c for c in classes if c not in unseen))
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
    info = dict(
        meta=meta,
        inputs=inputs,
        stage=stage,
        seed=seed,
        self_trained=False,
        unlisted=unlisted,
        # the directory self-training prepared (save_grown may
        # write there without force)
        work_dir=osp.realpath(work_dir) if self_train else None)
    if self_train:
        save_model(model, meta, osp.join(out, 'refit.pth'))
        st_cfg = self_train_config(grown, stage, osp.join(out, 'refit.pth'),
                                   osp.join(out, 'self_train'), seed)
        _dump_config(st_cfg, osp.join(out, 'self_train.py'))
        print_log(
            f'add_classes: self-training for {stage["iters"]} '
            'iterations on the grown class list '
            f'({osp.join(out, "self_train.py")})',
            logger='current')
        runner = Runner.from_cfg(st_cfg)
        runner.train()
        model = runner.model.module if is_model_wrapper(
            runner.model) else runner.model
        info['self_trained'] = True
    elif stage is not None and self_train_iters != 0:
        print_log(
            'add_classes: no self-training: it needs the training '
            'data (real=False / --no-real, or not reachable).',
            logger='current')
    model.eval()
    model.cfg = grown
    model.dataset_meta = copy.deepcopy(dataset_meta)
    model.add_classes_info = info
    return model, grown


def save_grown(model: nn.Module,
               config: Config,
               out: str,
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

    Args:
        model (nn.Module): the grown model (:func:`add_classes`).
        config (Config): its grown config.
        out (str): the output directory.
        force (bool): reuse a non-empty ``out``.
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
            print_log(
                'add_classes: self_train.py is not written: the '
                'training dataset does not list the added classes.',
                logger='current')
        else:
            written['refit'] = osp.join(out, 'refit.pth')
            save_model(model, info['meta'], written['refit'])
            written['self_train'] = osp.join(out, 'self_train.py')
            _dump_config(
                self_train_config(config, stage, written['refit'],
                                  osp.join(out, 'self_train'), info['seed']),
                written['self_train'])
            print_log(
                'add_classes: no self-training run; tools/train.py '
                f'{written["self_train"]} runs it.',
                logger='current')
    written['model'] = osp.join(out, 'model.pth')
    save_model(model, info['meta'], written['model'])
    return written
