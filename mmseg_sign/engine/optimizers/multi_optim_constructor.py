"""Build one optimizer wrapper per group of sub-modules (an
``OptimWrapperDict``), e.g. for SIGN's segmentor / generator /
discriminator / transfer optimizers.

Config::

    optim_wrapper = dict(
        constructor='ModuleGroupOptimWrapperConstructor',
        segmentor=dict(
            type='OptimWrapper',
            optimizer=dict(type='SGD', lr=2.5e-4, momentum=0.9),
            modules=['backbone', 'neck'],
            paramwise_cfg=dict(custom_keys={'neck': dict(lr_mult=10.)})),
        generator=dict(
            optimizer=dict(type='Adam', lr=2e-4),
            modules=['decode_head.generator']))

Each entry's ``paramwise_cfg`` is mmengine's (``custom_keys`` matched
against full parameter names such as ``neck.input_proj.0.conv.bias``,
``bias_lr_mult``, ``norm_decay_mult``, ...). Every optimizer is built up
front, so ``--resume`` restores all of them. An entry of
``type='AmpOptimWrapper'`` is built as ``MixedPrecisionOptimWrapper`` (the
same arguments, on a CPU as well as a GPU).

The dict's own ``type`` is the run's wrapper type: ``'OptimWrapper'`` (each
entry as it is written) or ``'AmpOptimWrapper'`` (mixed precision in every
entry, with the dict's ``dtype`` and ``loss_scale`` where an entry names
none). mmseg's and mmengine's tools switch a run to mixed precision
through that key (mmseg's ``tools/train.py --amp`` sets
``optim_wrapper.type = 'AmpOptimWrapper'``; mmengine on an Ascend NPU does
the same), so the shipped schedules write ``type='OptimWrapper'``.
"""
import copy
from typing import Optional

import torch.nn as nn
from mmengine.model import is_model_wrapper
from mmengine.optim import (AmpOptimWrapper, DefaultOptimWrapperConstructor,
                            OptimWrapper, OptimWrapperDict)
from mmseg.registry import (OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS,
                            OPTIMIZERS)

from ..amp import AMP_TYPES, convert_wrappers


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class ModuleGroupOptimWrapperConstructor:
    """Builds an ``OptimWrapperDict`` with one wrapper per named entry.

    Each entry is an optim-wrapper config (``type``, ``optimizer``,
    ``clip_grad``, ``paramwise_cfg``, ...) plus ``modules``: the dotted
    sub-module paths of the model whose trainable parameters it updates.
    A path to a part the model does not build (set to ``None``, e.g. D of
    a head with ``adversarial=False``) adds nothing; a path that names
    nothing is an error.
    Entries used by different stages may share parameters;
    ``StagePlanTrainLoop`` checks that the wrappers of one stage do not.
    """

    def __init__(self,
                 optim_wrapper_cfg: dict,
                 paramwise_cfg: Optional[dict] = None):
        if paramwise_cfg:
            raise ValueError('Put `paramwise_cfg` inside each optimizer '
                             'entry of optim_wrapper, not at its top level.')
        self.optim_wrapper_cfg = run_wrapper_type(
            copy.deepcopy(optim_wrapper_cfg))

    @staticmethod
    def _param_groups(model: nn.Module, name: str, modules, optimizer_cfg,
                      paramwise_cfg) -> list:
        selected = {}
        for path in modules:
            module = _submodule(model, name, path)
            if module is not None:
                selected.update(
                    (id(p), p) for p in module.parameters() if p.requires_grad)
        if not paramwise_cfg:
            return [dict(params=list(selected.values()))] if selected else []
        # mmengine's paramwise rules, on full parameter names
        constructor = DefaultOptimWrapperConstructor(
            dict(optimizer=optimizer_cfg), paramwise_cfg)
        groups = []
        constructor.add_params(groups, model)
        return [g for g in groups if id(g['params'][0]) in selected]

    def __call__(self, model: nn.Module) -> OptimWrapperDict:
        if is_model_wrapper(model):
            model = model.module
        wrappers = {}
        for name, cfg in self.optim_wrapper_cfg.items():
            if not isinstance(cfg, dict):
                raise ValueError(
                    f'optim_wrapper.{name} = {cfg!r}: every key of a dict '
                    'of optimizer wrappers but `constructor` and `type` '
                    '(with `dtype`, `loss_scale`) names a wrapper entry, a '
                    'dict with `optimizer` and `modules`.')
            cfg = copy.deepcopy(cfg)
            modules = cfg.pop('modules', None)
            if not modules:
                raise ValueError(f'optim_wrapper.{name} needs `modules`: '
                                 'the sub-modules whose parameters it '
                                 'updates, e.g. ["decode_head.generator"].')
            if 'lr_mult' in cfg:
                raise ValueError(
                    f'optim_wrapper.{name}.lr_mult is gone: use mmengine\'s '
                    "paramwise_cfg=dict(custom_keys={'neck': "
                    "dict(lr_mult=10.)}) inside the entry.")
            optimizer_cfg = cfg.pop('optimizer')
            groups = self._param_groups(model, name, modules, optimizer_cfg,
                                        cfg.pop('paramwise_cfg', None))
            if not groups:
                raise ValueError(f'optim_wrapper.{name}: the modules '
                                 f'{modules} have no trainable parameters.')
            optimizer = OPTIMIZERS.build(dict(optimizer_cfg, params=groups))
            cfg.setdefault('type', 'OptimWrapper')
            if cfg['type'] in ('AmpOptimWrapper', AmpOptimWrapper):
                # mmengine's asserts a GPU; this subclass runs anywhere
                cfg['type'] = 'MixedPrecisionOptimWrapper'
            wrappers[name] = OPTIM_WRAPPERS.build(
                dict(cfg, optimizer=optimizer))
        _check_gan_parts_stepped(model, wrappers)
        return OptimWrapperDict(**wrappers)


def run_wrapper_type(optim_wrapper_cfg: dict) -> dict:
    """The entries of ``optim_wrapper_cfg`` after its own ``type``,
    ``dtype`` and ``loss_scale`` (the run's wrapper type) are applied:
    ``AmpOptimWrapper`` makes every entry mixed precision
    (:func:`mmseg_sign.engine.amp.convert_wrappers`).

    Args:
        optim_wrapper_cfg (dict): ``cfg.optim_wrapper`` without
            ``constructor`` (changed in place).

    Returns:
        dict: ``{name: entry config}``.

    Raises:
        ValueError: another ``type``, ``dtype`` / ``loss_scale`` without
            ``type='AmpOptimWrapper'``, or a ``dtype`` against an entry's.
    """
    run_type = optim_wrapper_cfg.pop('type', 'OptimWrapper')
    optim_wrapper_cfg.pop('_scope_', None)  # mmengine's, beside a `type`
    amp = {
        k: optim_wrapper_cfg.pop(k)
        for k in ('dtype', 'loss_scale') if k in optim_wrapper_cfg
    }
    if run_type in (AmpOptimWrapper, *AMP_TYPES):
        entries = {
            n: w
            for n, w in optim_wrapper_cfg.items() if isinstance(w, dict)
        }  # others: refused when built
        convert_wrappers(
            entries,
            amp.get('dtype'),
            loss_scale=amp.get('loss_scale', 'dynamic'),
            asked_by='optim_wrapper.dtype')
    elif run_type not in ('OptimWrapper', OptimWrapper):
        raise ValueError(
            f"optim_wrapper.type={run_type!r}: the type of a dict of "
            "optimizer wrappers is 'OptimWrapper' (each entry as written) "
            "or 'AmpOptimWrapper' (mixed precision in every entry); give "
            "another wrapper type inside an entry, e.g. "
            "optim_wrapper.segmentor.type.")
    elif amp:
        raise ValueError(
            f'optim_wrapper.{next(iter(amp))} is for mixed precision: set '
            "optim_wrapper.type='AmpOptimWrapper' too (or train with "
            '--amp), or move it into one entry.')
    return optim_wrapper_cfg


def _submodule(model: nn.Module, name: str, path: str):
    """The sub-module at ``path``, or ``None`` where the model declares the
    part absent (the attribute is ``None``: ``SIGNHead(adversarial=False)``
    builds no ``discriminator``, so ZS3Net's D wrapper trains C alone with
    SIGN's ``modules`` list).

    Raises:
        ValueError: ``path`` names nothing in the model (a misspelling).
    """
    parent_path, _, attr = path.rpartition('.')
    try:
        parent = model.get_submodule(parent_path)
    except AttributeError:
        parent = None
    if isinstance(parent, nn.Module):
        if attr in parent._modules:  # a module, or None: declared absent
            return parent._modules[attr]
        if attr in parent.__dict__ and parent.__dict__[attr] is None:
            return None  # a plain attribute set to None: absent too
    raise ValueError(f'optim_wrapper.{name}: the model has no sub-module '
                     f'{path!r}.')


def _check_gan_parts_stepped(model: nn.Module, wrappers: dict) -> None:
    """A head's G and D, where built, are stepped by some wrapper: their
    losses are logged every train iteration, so a part no optimizer holds
    (ZS3Net's head with ``adversarial=True`` on the ZS3 configs, whose
    discriminator wrapper holds C only) would log losses and never learn.

    Raises:
        ValueError: naming the part and both fixes.
    """
    head = getattr(model, 'decode_head', None)
    held = {
        id(p)
        for w in wrappers.values() for g in w.optimizer.param_groups
        for p in g['params']
    }
    for part in ('generator', 'discriminator'):
        module = getattr(head, part, None)
        params = [p for p in module.parameters() if p.requires_grad] \
            if isinstance(module, nn.Module) else []
        if params and not any(id(p) in held for p in params):
            raise ValueError(
                f'decode_head.{part} is built (its losses are logged every '
                'training iteration) but no optimizer wrapper steps it: '
                f"add 'decode_head.{part}' to the `modules` of a wrapper "
                f"(e.g. optim_wrapper.{part}.modules), or do not build it" +
                (' (decode_head.adversarial=False)' if part ==
                 'discriminator' else '') + '.')
