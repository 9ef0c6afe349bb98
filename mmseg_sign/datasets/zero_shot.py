"""Base class of the zero-shot datasets: a class list plus a seen/unseen split.

Every zero-shot dataset carries its default split in ``METAINFO`` and lets a
config override it by class names (or indices)::

    dataset = dict(type='ZeroShotPascalVOCDataset',
                   metainfo=dict(unseen_classes=('sheep', 'sofa')), ...)

The resolved split is stored in ``dataset.metainfo`` as ``seen_classes`` and
``unseen_classes`` (names, in class order) so that the model config, the
``MaskUnseenClasses`` transform and ``GZSLIoUMetric`` all read one source.
"""
import copy
import logging
from typing import List, Optional, Sequence, Union

import mmcv
import mmengine.fileio as fileio
import numpy as np
from mmengine.logging import print_log

from mmseg.datasets import BaseSegDataset
from mmseg.registry import DATASETS

ClassRefs = Sequence[Union[str, int]]


def resolve_class_refs(refs: ClassRefs, classes: Sequence[str],
                       what: str) -> List[str]:
    """Turn class names or indices into class names, failing clearly.

    Args:
        refs: class names or 0-based indices into ``classes``.
        classes: the dataset's class names.
        what: a label for error messages, e.g. ``'unseen_classes'``.
    """
    if isinstance(refs, (str, int)):
        refs = [refs]
    names = []
    for ref in refs:
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            if not 0 <= ref < len(classes):
                raise ValueError(
                    f'{what}: class index {ref} is out of range; the dataset '
                    f'has {len(classes)} classes (0..{len(classes) - 1}).')
            names.append(classes[ref])
        elif isinstance(ref, str):
            names.append(_match_class_name(ref, classes, what))
        else:
            raise TypeError(f'{what}: expected class names or indices, got '
                            f'{ref!r} of type {type(ref).__name__}.')
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f'{what}: classes listed twice: {duplicates}.')
    return names


def _match_class_name(ref: str, classes: Sequence[str], what: str) -> str:
    """The dataset's spelling of the class ``ref``: an exact match, else
    the one class whose name equals ``ref`` after ``str.strip()`` (mmseg's
    ADE20K spells ``'bed '`` with a trailing space)."""
    if ref in classes:
        return ref
    matches = [c for c in classes if c.strip() == ref.strip()]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ValueError(f'{what}: class name {ref!r} is ambiguous: the '
                         f'classes {matches} differ only in white space.')
    raise ValueError(f'{what}: unknown class name {ref!r}. Valid names are: '
                     f'{", ".join(classes)}.')


def resolve_split(classes: Sequence[str],
                  seen: Optional[ClassRefs] = None,
                  unseen: Optional[ClassRefs] = None):
    """Return ``(seen_names, unseen_names)`` in class order.

    Either list may be omitted (it is then the complement of the other); if
    both are given they must not overlap and must together cover every class.
    """
    classes = list(classes)
    if seen is None and unseen is None:
        raise ValueError('A zero-shot dataset needs `unseen_classes` (or '
                         '`seen_classes`) in its metainfo.')
    seen_n = None if seen is None else resolve_class_refs(
        seen, classes, 'seen_classes')
    unseen_n = None if unseen is None else resolve_class_refs(
        unseen, classes, 'unseen_classes')
    if seen_n is not None and unseen_n is not None:
        overlap = [c for c in seen_n if c in unseen_n]
        if overlap:
            raise ValueError(f'Classes {overlap} are listed as both seen and '
                             'unseen; give each class to one group only.')
        missing = [c for c in classes if c not in seen_n + unseen_n]
        if missing:
            raise ValueError(
                f'Classes {missing} are neither seen nor unseen; list them '
                'in one group, or give only `unseen_classes` and let the '
                'rest be seen.')
    elif seen_n is None:
        seen_n = [c for c in classes if c not in unseen_n]
    else:
        unseen_n = [c for c in classes if c not in seen_n]
    if not seen_n:
        raise ValueError('The seen set is empty: a zero-shot model needs at '
                         'least one seen class to train on.')
    order = {c: i for i, c in enumerate(classes)}
    return (tuple(sorted(seen_n, key=order.get)),
            tuple(sorted(unseen_n, key=order.get)))


_SPLIT_KEYS = ('seen_classes', 'unseen_classes')


def split_into_metainfo(metainfo: Optional[dict], where: str,
                        **split) -> Optional[dict]:
    """``metainfo`` with the non-``None`` ``seen_classes`` /
    ``unseen_classes`` of ``split`` added; an error if ``metainfo`` already
    holds a different value."""
    metainfo = copy.deepcopy(dict(metainfo)) if metainfo else {}
    for key in _SPLIT_KEYS:
        value = split.get(key)
        if value is None:
            continue
        if isinstance(value, (str, int)):
            value = [value]
        if metainfo.get(key) is not None:
            given = metainfo[key]
            given = [given] if isinstance(given, (str, int)) else list(given)
            if given != list(value):
                raise ValueError(
                    f'{where}: {key} given twice with different values: '
                    f'{key}={list(value)} and metainfo.{key}={given}; '
                    'set it once.')
        metainfo[key] = list(value)
    return metainfo or None


class ZeroShotMixin:
    """Seen / unseen split for a :class:`mmseg.datasets.BaseSegDataset`
    subclass; put it first in the bases: ``(ZeroShotMixin, Inner)``.

    Args:
        seen_classes / unseen_classes: names (compared after ``strip()``)
            or indices; either one, the other is the complement. May also
            be given in ``metainfo`` (the project's convention); giving
            both places different values is an error. Without either the
            class's ``METAINFO['unseen_classes']`` is used.
        drop_unseen_images (bool): drop every training image whose label
            map holds an unseen class (ZS3) instead of ignoring the unseen
            pixels (SPNet / CaGNet / SIGN, the default).
        held_out_classes (Sequence[str], optional): classes kept out of the
            class list entirely (neither seen nor unseen: their pixels are
            void, through mmseg's ``label_map``), e.g. to add one by name
            later with ``tools/add_classes.py``. Also a ``metainfo`` key.
        *args, **kwargs: the inner dataset's.
    """

    def __init__(self,
                 *args,
                 seen_classes: Optional[ClassRefs] = None,
                 unseen_classes: Optional[ClassRefs] = None,
                 drop_unseen_images: bool = False,
                 held_out_classes: Optional[Sequence[str]] = None,
                 metainfo: Optional[dict] = None,
                 **kwargs):
        metainfo = self.metainfo_argument(
            metainfo, seen_classes=seen_classes,
            unseen_classes=unseen_classes,
            held_out_classes=held_out_classes)
        self.drop_unseen_images = drop_unseen_images
        super().__init__(*args, metainfo=metainfo, **kwargs)

    @classmethod
    def metainfo_argument(cls, metainfo: Optional[dict] = None,
                          seen_classes: Optional[ClassRefs] = None,
                          unseen_classes: Optional[ClassRefs] = None,
                          held_out_classes: Optional[Sequence[str]] = None,
                          **_) -> Optional[dict]:
        """The ``metainfo`` that :meth:`_load_metainfo` receives for these
        constructor arguments (the split and held-out classes folded in);
        config checks resolve a dataset config through it without building
        the dataset."""
        metainfo = split_into_metainfo(
            metainfo, cls.__name__, seen_classes=seen_classes,
            unseen_classes=unseen_classes)
        if held_out_classes:
            metainfo = dict(metainfo or {},
                            held_out_classes=list(held_out_classes))
        return metainfo

    @classmethod
    def _load_metainfo(cls, metainfo: Optional[dict] = None) -> dict:
        metainfo = copy.deepcopy(dict(metainfo)) if metainfo else {}
        user_seen = metainfo.pop('seen_classes', None)
        user_unseen = metainfo.pop('unseen_classes', None)
        held_out = list(metainfo.pop('held_out_classes', None) or ())
        if held_out:
            classes = metainfo.get('classes') or cls.METAINFO.get('classes')
            held_out = resolve_class_refs(held_out, classes,
                                          'held_out_classes')
            metainfo['classes'] = [c for c in classes if c not in held_out]
        merged = super()._load_metainfo(metainfo)
        if user_seen is None and user_unseen is None:
            user_seen = cls.METAINFO.get('seen_classes')
            user_unseen = cls.METAINFO.get('unseen_classes')
            if held_out:  # the protocol's default split, less them
                user_seen, user_unseen = (
                    None if refs is None else
                    [c for c in refs if c not in held_out]
                    for refs in (user_seen, user_unseen))
        if user_seen is None and user_unseen is None:
            raise ValueError(
                f'{cls.__name__} needs `unseen_classes` (or `seen_classes`)'
                ': class names or indices, e.g. '
                "dict(type='ZeroShotDataset', dataset_type=..., "
                "unseen_classes=['bed', 'plant']).")
        seen, unseen = resolve_split(merged['classes'], user_seen,
                                     user_unseen)
        merged.update(seen_classes=seen, unseen_classes=unseen)
        if held_out:
            merged['held_out_classes'] = tuple(held_out)
        return merged

    @property
    def unseen_class_ids(self) -> List[int]:
        classes = list(self.metainfo['classes'])
        return [classes.index(c) for c in self.metainfo['unseen_classes']]

    def load_data_list(self) -> List[dict]:
        data_list = super().load_data_list()
        extra = dict(
            num_classes=len(self.metainfo['classes']),
            unseen_class_ids=self.unseen_class_ids,
            ignore_index=getattr(self, 'ignore_index', 255))
        for info in data_list:
            info.update(copy.deepcopy(extra))
        if self.drop_unseen_images and not self.test_mode:
            kept = [i for i in data_list if not self._has_unseen_pixels(i)]
            print_log(
                f'{type(self).__name__}: dropped {len(data_list) - len(kept)}'
                f' of {len(data_list)} images that contain unseen classes.',
                logger='current')
            data_list = kept
        return data_list

    def mask_unseen_labels(self) -> bool:
        """Training: guarantee that no unseen label leaves this dataset.

        Unless ``drop_unseen_images``, inserts ``MaskUnseenClasses`` right
        after ``LoadAnnotations`` when the pipeline lacks it there, and says
        so in the log. Returns whether it inserted the transform.
        """
        from mmseg.datasets.transforms import LoadAnnotations

        from .transforms.zero_shot import MaskUnseenClasses
        transforms = self.pipeline.transforms
        load = next((i for i, t in enumerate(transforms)
                     if isinstance(t, LoadAnnotations)), None)
        if self.drop_unseen_images or load is None or any(
                isinstance(t, MaskUnseenClasses)
                for t in transforms[load + 1:]):
            return False
        transforms.insert(load + 1, MaskUnseenClasses())
        print_log(
            f'{type(self).__name__}: the training pipeline had no '
            'MaskUnseenClasses after LoadAnnotations, so the unseen classes '
            f'{tuple(self.metainfo["unseen_classes"])} would have been '
            'learnt from their labels; inserted it (put '
            "dict(type='MaskUnseenClasses') after LoadAnnotations in "
            'train_pipeline to silence this).',
            logger='current', level=logging.WARNING)
        return True

    def _has_unseen_pixels(self, info: dict) -> bool:
        from .transforms.zero_shot import reduce_label
        img_bytes = fileio.get(info['seg_map_path'],
                               getattr(self, 'backend_args', None))
        seg = mmcv.imfrombytes(
            img_bytes, flag='unchanged', backend='pillow').squeeze()
        seg = reduce_label(seg, getattr(self, 'reduce_zero_label', False),
                           self.metainfo.get('label_map'))
        return bool(np.isin(seg, self.unseen_class_ids).any())



@DATASETS.register_module()
class ZeroShotSegDataset(ZeroShotMixin, BaseSegDataset):
    """A segmentation dataset with a seen / unseen class split (the split
    logic is :class:`ZeroShotMixin`'s, shared with ``ZeroShotDataset``,
    which makes any mmseg dataset zero-shot). Subclasses give the
    protocol's default split in ``METAINFO['unseen_classes']``."""

    METAINFO: dict = dict()
