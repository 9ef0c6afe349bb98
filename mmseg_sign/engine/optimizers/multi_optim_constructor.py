"""Build one optimizer wrapper per group of sub-modules (an
``OptimWrapperDict``), e.g. for SIGN's segmentor / generator /
discriminator / transfer optimizers.

Config::

    optim_wrapper = dict(
        constructor='ModuleGroupOptimWrapperConstructor',
        segmentor=dict(
            type='OptimWrapper',
            optimizer=dict(type='SGD', lr=2.5e-4, momentum=0.9),
            modules=['backbone', 'neck', 'decode_head.conv_seg'],
            lr_mult=dict(neck=10.0)),
        generator=dict(
            optimizer=dict(type='Adam', lr=2e-4),
            modules=['decode_head.generator']))

Every optimizer is built up front, so ``--resume`` restores all of them.
"""
import copy
from typing import Optional

import torch.nn as nn
from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapperDict

from mmseg.registry import (OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS,
                            OPTIMIZERS)


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class ModuleGroupOptimWrapperConstructor:
    """Builds an ``OptimWrapperDict`` with one wrapper per named entry.

    Each entry is an optim-wrapper config plus ``modules`` (dotted
    sub-module paths of the model whose parameters it updates) and an
    optional ``lr_mult`` (path → learning-rate multiplier).
    """

    def __init__(self, optim_wrapper_cfg: dict,
                 paramwise_cfg: Optional[dict] = None):
        if paramwise_cfg:
            raise ValueError('Use `lr_mult` inside each optimizer entry '
                             'instead of paramwise_cfg.')
        self.optim_wrapper_cfg = copy.deepcopy(optim_wrapper_cfg)

    def __call__(self, model: nn.Module) -> OptimWrapperDict:
        if is_model_wrapper(model):
            model = model.module
        wrappers = {}
        for name, cfg in self.optim_wrapper_cfg.items():
            cfg = copy.deepcopy(cfg)
            modules = cfg.pop('modules', None)
            if not modules:
                raise ValueError(f'optim_wrapper.{name} needs `modules`: '
                                 'the sub-modules whose parameters it '
                                 'updates, e.g. ["decode_head.generator"].')
            lr_mult = cfg.pop('lr_mult', {}) or {}
            unknown = set(lr_mult) - set(modules)
            if unknown:
                raise ValueError(f'optim_wrapper.{name}.lr_mult names '
                                 f'{sorted(unknown)}, which are not in its '
                                 f'modules {modules}.')
            optimizer_cfg = cfg.pop('optimizer')
            groups = []
            for path in modules:
                try:
                    module = model.get_submodule(path)
                except AttributeError:
                    raise ValueError(
                        f'optim_wrapper.{name}: the model has no sub-module '
                        f'{path!r}.') from None
                params = [p for p in module.parameters() if p.requires_grad]
                if not params:
                    continue
                group = dict(params=params)
                if path in lr_mult:
                    group['lr'] = optimizer_cfg['lr'] * lr_mult[path]
                groups.append(group)
            if not groups:
                raise ValueError(f'optim_wrapper.{name}: the modules '
                                 f'{modules} have no trainable parameters.')
            optimizer = OPTIMIZERS.build(dict(optimizer_cfg, params=groups))
            cfg.setdefault('type', 'OptimWrapper')
            wrappers[name] = OPTIM_WRAPPERS.build(
                dict(cfg, optimizer=optimizer))
        return OptimWrapperDict(**wrappers)
