"""Make any mmseg dataset zero-shot: ``ZeroShotDataset``.

::

    dataset = dict(type='ZeroShotDataset', dataset_type='ADE20KDataset',
                   unseen_classes=['bed', 'plant', ...],
                   data_root=..., data_prefix=..., pipeline=...)

or, with the inner dataset as its own dict::

    dataset = dict(type='ZeroShotDataset',
                   dataset=dict(type='ADE20KDataset', data_root=..., ...),
                   unseen_classes=[...])

The first form merges onto a base config's ``dataset=dict(type=...,
data_root=..., data_prefix=..., pipeline=...)``: the child only changes
``type`` and adds ``dataset_type`` and the split (``configs/sign/
sign_ade20k.py``).

Design: not a wrapper object but a dynamic subclass
``ZeroShot<Inner>`` = ``(ZeroShotMixin, Inner)``, built once per inner class
and instantiated with the inner dataset's arguments. The result *is* an
``ADE20KDataset`` (its own pipeline, ``lazy_init``, ``serialize_data``,
``get_subset``...) and gives what every project zero-shot dataset gives:
``metainfo`` with ``classes``, ``palette``, ``seen_classes`` and
``unseen_classes`` (:func:`resolve_split`, names compared after
``str.strip()``); ``num_classes``, ``unseen_class_ids`` and ``ignore_index``
in every data info (added in ``load_data_list``, so before mmengine
serialises the list), for ``MaskUnseenClasses`` / ``CheckSegLabels``;
``drop_unseen_images``; ``mask_unseen_labels()``.
"""
import copy
import sys
from collections.abc import Mapping
from typing import Optional, Union

from mmseg.registry import DATASETS

from .zero_shot import ZeroShotMixin, split_into_metainfo

_SUBCLASSES = {}


def zero_shot_class(inner: Union[str, type]) -> type:
    """The class ``ZeroShot<Inner>`` = ``(ZeroShotMixin, Inner)``; one per
    inner class, importable from this module by name (so it pickles).

    Args:
        inner (str | type): an mmseg dataset class or its registry name.

    Returns:
        type: the zero-shot class.
    """
    if isinstance(inner, str):
        name = inner
        inner = DATASETS.get(inner)
        if inner is None:
            raise KeyError(
                f'ZeroShotDataset: dataset type {name!r} is not registered '
                "in mmseg's DATASETS (custom_imports for a plugin's "
                'datasets?).')
    if not isinstance(inner, type):
        raise TypeError(f'ZeroShotDataset: {inner!r} is not a dataset '
                        'class.')
    if issubclass(inner, ZeroShotMixin) or hasattr(inner,
                                                   'mask_unseen_labels'):
        return inner  # already zero-shot (e.g. ZeroShotPascalVOCDataset)
    if inner not in _SUBCLASSES:
        name = f'ZeroShot{inner.__name__}'
        cls = type(
            name, (ZeroShotMixin, inner),
            dict(
                __module__=__name__,
                __qualname__=name,
                __doc__=f'{inner.__name__} with a seen / unseen split '
                '(see :class:`ZeroShotMixin`).'))
        _SUBCLASSES[inner] = cls
        setattr(sys.modules[__name__], name, cls)
    return _SUBCLASSES[inner]


def __getattr__(name: str):
    # unpickling ZeroShot<Inner> in a fresh process (spawned workers)
    if name.startswith('ZeroShot') and len(name) > len('ZeroShot'):
        inner = DATASETS.get(name[len('ZeroShot'):])
        if inner is not None:
            return zero_shot_class(inner)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def _inner_args(dataset, dataset_type, kwargs):
    """``(inner class, inner arguments)`` of a ``ZeroShotDataset`` call,
    with the split moved into ``metainfo``."""
    if (dataset is None) == (dataset_type is None):
        raise ValueError(
            'ZeroShotDataset needs exactly one of `dataset` (the inner '
            "dataset's config) and `dataset_type` (its type, with its "
            'arguments beside it).')
    if dataset is not None:
        args = copy.deepcopy(dict(dataset))
        dataset_type = args.pop('type', None)
        if dataset_type is None:
            raise ValueError('ZeroShotDataset: `dataset` has no `type`.')
        args.update(kwargs)
    else:
        args = dict(kwargs)
    args.pop('_scope_', None)
    cls = zero_shot_class(dataset_type)
    # the project's zero-shot datasets take the split in metainfo only
    args['metainfo'] = split_into_metainfo(
        args.get('metainfo'),
        'ZeroShotDataset',
        seen_classes=args.pop('seen_classes', None),
        unseen_classes=args.pop('unseen_classes', None))
    return cls, args


def zero_shot_metainfo_from_cfg(cfg: dict) -> dict:
    """The metainfo (classes and split) that a ``ZeroShotDataset`` config
    resolves to, without building the dataset or reading a file.

    Args:
        cfg (dict): a ``ZeroShotDataset`` config.

    Returns:
        dict: its metainfo.
    """
    cfg = dict(cfg)
    cfg.pop('type', None)
    cls, args = _inner_args(
        cfg.pop('dataset', None), cfg.pop('dataset_type', None), cfg)
    return cls._load_metainfo(cls.metainfo_argument(**args))


def dataset_metainfo_from_cfg(cfg) -> Optional[dict]:
    """The metainfo (classes and split) a zero-shot dataset config resolves
    to, without building it or reading a file; ``None`` for a dataset that
    is not zero-shot (or a type this process cannot resolve).

    Args:
        cfg (dict): a dataset config.

    Returns:
        dict | None: its metainfo.
    """
    if not isinstance(cfg, Mapping):
        return None
    dataset_type = cfg.get('type')
    if dataset_type in ('ZeroShotDataset', ZeroShotDataset):
        return zero_shot_metainfo_from_cfg(cfg)
    cls = DATASETS.get(dataset_type) if isinstance(dataset_type, str) \
        else dataset_type
    if not isinstance(cls, type) or not hasattr(cls, 'mask_unseen_labels'):
        return None
    return cls._load_metainfo(cls.metainfo_argument(**cfg))


@DATASETS.register_module(name='ZeroShotDataset')
def ZeroShotDataset(dataset: Optional[dict] = None,
                    dataset_type: Union[str, type, None] = None,
                    **kwargs):
    """Build any mmseg dataset with a seen / unseen split.

    Args:
        dataset (dict, optional): the inner dataset's config (``type`` and
            its arguments).
        dataset_type (str | type, optional): instead of ``dataset``: the
            inner type; its arguments are then the other keyword
            arguments, so this dict merges onto a base config's dataset.
        **kwargs: ``unseen_classes`` / ``seen_classes``,
            ``drop_unseen_images`` (see :class:`ZeroShotMixin`) and, with
            ``dataset_type``, the inner dataset's arguments (with
            ``dataset``, they override its keys).

    Returns:
        An instance of ``ZeroShot<Inner>``, a subclass of the inner type.
    """
    cls, args = _inner_args(dataset, dataset_type, kwargs)
    return cls(**args)


def metainfo_from_cfg(dataset_cfg) -> Optional[dict]:
    """The metainfo a dataset config resolves to, without building the
    dataset (no file is read): the class's ``_load_metainfo``. Dataset
    wrappers (``dataset=`` / ``datasets=[...]``) give their first
    dataset's, as mmengine's wrappers do.

    Args:
        dataset_cfg (dict): a dataset config.

    Returns:
        dict | None: its metainfo; ``None`` if unknown.
    """
    if not isinstance(dataset_cfg, Mapping):
        return None
    meta = dataset_metainfo_from_cfg(dataset_cfg)  # zero-shot types
    if meta is not None:
        return meta
    if isinstance(dataset_cfg.get('dataset'), Mapping):
        return metainfo_from_cfg(dataset_cfg['dataset'])
    if isinstance(dataset_cfg.get('datasets'), (list, tuple)) and \
            dataset_cfg['datasets']:
        return metainfo_from_cfg(dataset_cfg['datasets'][0])
    cls = dataset_cfg.get('type')
    if isinstance(cls, str):
        cls = DATASETS.get(cls)
    if cls is None or not hasattr(cls, '_load_metainfo'):
        return None
    return cls._load_metainfo(dataset_cfg.get('metainfo'))
