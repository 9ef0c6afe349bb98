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
from typing import List, Optional, Sequence

import numpy as np
from mmengine.logging import print_log
from mmseg.datasets import BaseSegDataset
from mmseg.registry import DATASETS

from ..structures.class_split import (ClassRefs, _as_list, resolve_class_refs,
                                      resolve_split, split_into_metainfo)
from .pipeline_checks import (_draws_at_random, _image_size, _swap_loaders,
                              check_files_exist)
from .transforms.zero_shot import (MaskUnseenClasses, check_label_values,
                                   check_raw_label, present_values,
                                   read_label_map, reduce_label)


def _refuse_held_out_in_split(where: str, held_out: Sequence[str],
                              **split) -> None:
    """A held-out class is neither seen nor unseen: naming it in the split
    too is an error that says so (not an 'unknown class')."""
    held = {h.strip() for h in held_out}
    for key, refs in split.items():
        both = [
            r for r in _as_list(refs)
            if isinstance(r, str) and r.strip() in held
        ]
        if both:
            raise ValueError(
                f'{where}: {both} are held out (held_out_classes) and also '
                f'listed in {key}; a held-out class is neither seen nor '
                'unseen (its pixels are void). Remove them from '
                f'{key}, or from held_out_classes.')


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
            pixels (SPNet / CaGNet / SIGN, the default). Refused on a
            dataset that evaluates (see below).
        held_out_classes (Sequence[str], optional): classes kept out of the
            class list entirely (neither seen nor unseen: their pixels are
            void, through mmseg's ``label_map``), e.g. to add one by name
            later with ``tools/add_classes.py``. Also a ``metainfo`` key.
        *args, **kwargs: the inner dataset's.

    When built, before any dataloader worker copies it, the dataset decides
    from its pipeline whether it trains (no unseen label may leave it) or
    evaluates (every label kept) and checks the pipeline against that
    (:meth:`_check_pipeline`); every label map is checked where it is read
    (:class:`CheckedLoadAnnotations`), and the first one at build time.
    """

    #: The ``reduce_zero_label`` that this dataset's label files need
    #: (``None``: not declared). Another value is refused at build time:
    #: on 0-based maps ``True`` shifts every class by one (and ignores
    #: class 0), on 1-based maps ``False`` trains background as class 0.
    REDUCE_ZERO_LABEL: Optional[bool] = None
    #: How to get the data, for the error when its files are missing.
    HOW_TO_GET = 'Prepare it as docs/user_guide.md ("Datasets") says.'

    def __init__(self,
                 *args,
                 seen_classes: Optional[ClassRefs] = None,
                 unseen_classes: Optional[ClassRefs] = None,
                 drop_unseen_images: bool = False,
                 held_out_classes: Optional[Sequence[str]] = None,
                 metainfo: Optional[dict] = None,
                 **kwargs):
        self._check_reduce_zero_label(kwargs.get('reduce_zero_label'))
        metainfo = self.metainfo_argument(
            metainfo,
            seen_classes=seen_classes,
            unseen_classes=unseen_classes,
            held_out_classes=held_out_classes)
        self.drop_unseen_images = drop_unseen_images
        super().__init__(*args, metainfo=metainfo, **kwargs)
        self._check_pipeline()  # also with lazy_init

    @classmethod
    def _check_reduce_zero_label(cls, given: Optional[bool]) -> None:
        declared = cls.REDUCE_ZERO_LABEL
        if declared is None or given is None or bool(given) == declared:
            return
        classes = cls.METAINFO.get('classes') or ('?', )
        if declared:
            files = ('1-based (0 = background, 1 = '
                     f'{classes[0]!r}, 255 = ignore)')
            effect = ('background would be trained as class '
                      f'{classes[0]!r} and every class shifted by one')
        else:
            files = f'0-based (0 = {classes[0]!r}, 255 = ignore)'
            effect = (f'class {classes[0]!r} would be ignored and every '
                      'other class shifted by one')
        raise ValueError(
            f'{cls.__name__}: reduce_zero_label={given}, but its label maps '
            f'are {files}: {effect}. Remove reduce_zero_label from the '
            f'dataset (its default, {declared}, matches the maps the '
            'documented preparation writes).')

    @classmethod
    def metainfo_argument(cls,
                          metainfo: Optional[dict] = None,
                          seen_classes: Optional[ClassRefs] = None,
                          unseen_classes: Optional[ClassRefs] = None,
                          held_out_classes: Optional[Sequence[str]] = None,
                          **_) -> Optional[dict]:
        """The ``metainfo`` that :meth:`_load_metainfo` receives for these
        constructor arguments (the split and held-out classes folded in);
        config checks resolve a dataset config through it without building
        the dataset."""
        metainfo = split_into_metainfo(
            metainfo,
            cls.__name__,
            seen_classes=seen_classes,
            unseen_classes=unseen_classes)
        if held_out_classes:
            metainfo = dict(
                metainfo or {}, held_out_classes=_as_list(held_out_classes))
        return metainfo

    @classmethod
    def _load_metainfo(cls, metainfo: Optional[dict] = None) -> dict:
        metainfo = copy.deepcopy(dict(metainfo)) if metainfo else {}
        user_seen = metainfo.pop('seen_classes', None)
        user_unseen = metainfo.pop('unseen_classes', None)
        held_out = _as_list(metainfo.pop('held_out_classes', None) or ())
        if held_out:
            classes = metainfo.get('classes') or cls.METAINFO.get('classes')
            held_out = resolve_class_refs(held_out, classes,
                                          'held_out_classes')
            _refuse_held_out_in_split(
                cls.__name__,
                held_out,
                seen_classes=user_seen,
                unseen_classes=user_unseen)
            metainfo['classes'] = [c for c in classes if c not in held_out]
        merged = super()._load_metainfo(metainfo)
        if user_seen is None and user_unseen is None:
            user_seen = cls.METAINFO.get('seen_classes')
            user_unseen = cls.METAINFO.get('unseen_classes')
            if held_out:  # the protocol's default split, less them
                user_seen, user_unseen = (None if refs is None else [
                    c for c in refs if c not in held_out
                ] for refs in (user_seen, user_unseen))
        if user_seen is None and user_unseen is None:
            raise ValueError(
                f'{cls.__name__} needs `unseen_classes` (or `seen_classes`)'
                ': class names or indices, e.g. '
                "dict(type='ZeroShotDataset', dataset_type=..., "
                "unseen_classes=['bed', 'plant']).")
        seen, unseen = resolve_split(merged['classes'], user_seen, user_unseen)
        merged.update(seen_classes=seen, unseen_classes=unseen)
        if held_out:
            merged['held_out_classes'] = tuple(held_out)
        return merged

    @property
    def unseen_class_ids(self) -> List[int]:
        classes = list(self.metainfo['classes'])
        return [classes.index(c) for c in self.metainfo['unseen_classes']]

    def load_data_list(self) -> List[dict]:
        self._check_pipeline()
        check_files_exist(self)
        data_list = super().load_data_list()
        name = type(self).__name__
        if not data_list:
            ann = getattr(self, 'ann_file', '')
            where = (f'the split file {ann!r} lists no sample'
                     if ann else 'no image with suffix '
                     f"{getattr(self, 'img_suffix', '?')!r} in "
                     f"{self.data_prefix.get('img_path', '?')!r}")
            raise ValueError(f'{name}: the dataset is empty: {where}. Check '
                             'data_root, data_prefix and ann_file.')
        extra = dict(
            num_classes=len(self.metainfo['classes']),
            unseen_class_ids=self.unseen_class_ids,
            ignore_index=getattr(self, 'ignore_index', 255))
        for info in data_list:
            info.update(copy.deepcopy(extra))
        self._check_first_label(data_list[0])
        if self.drop_unseen_images:
            kept = [i for i in data_list if not self._has_unseen_pixels(i)]
            if not kept:
                raise ValueError(
                    f'{name}: drop_unseen_images=True dropped all '
                    f'{len(data_list)} images (each holds an unseen class '
                    f'of {tuple(self.metainfo["unseen_classes"])}); use '
                    "dict(type='MaskUnseenClasses') instead, or a split "
                    'with fewer unseen classes.')
            print_log(
                f'{name}: dropped {len(data_list) - len(kept)}'
                f' of {len(data_list)} images that contain unseen classes.',
                logger='current')
            data_list = kept
        return data_list

    # -------------------------------------------------------------- pipeline
    def _check_pipeline(self) -> Optional[str]:
        """Decide, before any worker process copies the pipeline, whether
        this dataset trains (no unseen label may leave it) or evaluates
        (every label kept), and make the pipeline say so. Returns
        ``'train'``, ``'eval'`` or ``None`` (it reads no label map).

        * mmseg's ``LoadAnnotations`` becomes :class:`CheckedLoadAnnotations`
          (every label map checked where it is read);
        * a pipeline with ``MaskUnseenClasses`` trains; the transform must
          sit between ``LoadAnnotations`` and ``PackSegInputs``, and not
          in a ``test_mode`` dataset;
        * ``test_mode=True`` evaluates;
        * otherwise a pipeline with random transforms (``Random*``,
          ``PhotoMetricDistortion``...) trains: ``MaskUnseenClasses`` is
          inserted right after ``LoadAnnotations`` (unless
          ``drop_unseen_images``) and the log says so;
        * a deterministic pipeline evaluates; ``drop_unseen_images=True``
          on an evaluating dataset is an error (it would drop images from
          the evaluation).
        """
        from mmseg.datasets.transforms import LoadAnnotations, PackSegInputs
        pipeline = getattr(self, 'pipeline', None)
        if pipeline is None:
            return None
        loaders = _swap_loaders(pipeline, self)
        transforms = pipeline.transforms
        names = [type(t).__name__ for t in transforms]
        top = [
            i for i, t in enumerate(transforms)
            if isinstance(t, LoadAnnotations)
        ]
        masks = [
            i for i, t in enumerate(transforms)
            if isinstance(t, MaskUnseenClasses)
        ]
        packs = [
            i for i, t in enumerate(transforms)
            if isinstance(t, PackSegInputs)
        ]
        name = type(self).__name__
        if masks:
            if self.test_mode:
                raise ValueError(
                    f'{name}: test_mode=True, but its pipeline has '
                    'MaskUnseenClasses, which turns the unseen classes into '
                    'ignore: the evaluation would score nothing on them. '
                    "Use dict(type='CheckSegLabels') in val / test "
                    'pipelines.')
            if not top or masks[0] < top[0] or (packs
                                                and masks[-1] > packs[0]):
                raise ValueError(
                    f'{name}: MaskUnseenClasses at position {masks[0]} of '
                    f'the pipeline {names} does nothing there (it needs the '
                    'label map that LoadAnnotations adds and PackSegInputs '
                    'packs away): the unseen classes would be learnt from '
                    'their labels. Put it right after LoadAnnotations.')
            return 'train'
        if not loaders:
            return None
        randoms = [n for n, t in zip(names, transforms) if _draws_at_random(t)]
        train_like = bool(randoms) and not self.test_mode
        if self.drop_unseen_images and not train_like:
            why = ('test_mode=True' if self.test_mode else
                   f'its pipeline {names} has neither MaskUnseenClasses '
                   'nor a random transform')
            raise ValueError(
                f'{name}: drop_unseen_images=True on a dataset that '
                f'evaluates ({why}): it would drop every image holding an '
                'unseen class from the evaluation. Set drop_unseen_images '
                'on the training dataset only (not in a dict shared with '
                "val / test); if this is the training dataset, put "
                "dict(type='MaskUnseenClasses') after LoadAnnotations to "
                'say so.')
        if not train_like:
            return 'eval'
        if not self.metainfo['unseen_classes']:
            return 'train'  # every class seen (a supervised run): no mask
        if not self.drop_unseen_images:
            if not top:
                raise ValueError(
                    f'{name}: the training pipeline {names} loads label '
                    'maps inside another transform and has no '
                    "MaskUnseenClasses; put dict(type='MaskUnseenClasses') "
                    'right after LoadAnnotations.')
            transforms.insert(top[0] + 1, MaskUnseenClasses())
            print_log(
                f'{name}: the training pipeline (random transforms '
                f'{randoms}) had no MaskUnseenClasses, so the unseen classes '
                f'{tuple(self.metainfo["unseen_classes"])} would have been '
                'learnt from their labels; inserted it after LoadAnnotations '
                "(put dict(type='MaskUnseenClasses') after LoadAnnotations "
                'in train_pipeline to silence this).',
                logger='current',
                level=logging.WARNING)
        return 'train'

    def mask_unseen_labels(self, insert: bool = False) -> bool:
        """Called by a trainer on its training dataset (``ClassSplitHook``
        before iteration 1): guarantee that no unseen label leaves it.

        Training pipelines are recognised at build time
        (:meth:`_check_pipeline`); a deterministic one without
        ``MaskUnseenClasses`` was taken for an evaluation pipeline. That is
        an error here, since dataloader workers may already hold a copy of
        the pipeline; with ``insert=True`` (a caller that has not started
        workers yet) ``MaskUnseenClasses`` is inserted right after
        ``LoadAnnotations`` instead, and the log says so.
        Returns whether it inserted the transform.
        """
        from mmseg.datasets.transforms import LoadAnnotations

        transforms = self.pipeline.transforms
        load = next((i for i, t in enumerate(transforms)
                     if isinstance(t, LoadAnnotations)), None)
        if self.drop_unseen_images or load is None or any(
                isinstance(t, MaskUnseenClasses) for t in transforms):
            return False
        name = type(self).__name__
        unseen = tuple(self.metainfo['unseen_classes'])
        if not insert:
            raise ValueError(
                f'{name}: the training pipeline '
                f'{[type(t).__name__ for t in transforms]} has no '
                'MaskUnseenClasses and no random transform, so the dataset '
                'took it for an evaluation pipeline and keeps the labels of '
                f'the unseen classes {unseen}: they would be learnt. Put '
                "dict(type='MaskUnseenClasses') right after LoadAnnotations "
                'in train_pipeline (or set drop_unseen_images=True).')
        transforms.insert(load + 1, MaskUnseenClasses())
        print_log(
            f'{name}: the training pipeline had no MaskUnseenClasses after '
            f'LoadAnnotations, so the unseen classes {unseen} would have '
            'been learnt from their labels; inserted it (put '
            "dict(type='MaskUnseenClasses') after LoadAnnotations in "
            'train_pipeline to silence this).',
            logger='current',
            level=logging.WARNING)
        return True

    # ---------------------------------------------------------------- labels
    def _read_label(self, info: dict) -> np.ndarray:
        """The checked, reduced label map of a data info (as the pipeline's
        ``CheckedLoadAnnotations`` gives it)."""
        path = info['seg_map_path']
        seg = read_label_map(path, getattr(self, 'backend_args', None))
        seg = check_raw_label(seg, path, _image_size(info, self))
        reduce = getattr(self, 'reduce_zero_label', False)
        seg = reduce_label(seg, reduce, self.metainfo.get('label_map'))
        check_label_values(seg, len(self.metainfo['classes']),
                           getattr(self, 'ignore_index', 255), path, reduce)
        return seg

    def _check_first_label(self, info: dict) -> None:
        """Read the first label map at build time: a wrong
        ``reduce_zero_label``, class count or label format stops the run
        before any training (also for the val / test sets)."""
        if info.get('seg_map_path'):
            self._read_label(info)

    def _has_unseen_pixels(self, info: dict) -> bool:
        seg = self._read_label(info)
        return bool(np.isin(present_values(seg), self.unseen_class_ids).any())


def mask_unseen_labels(dataset, insert: bool = False) -> None:
    """No unseen label may leave a training dataset: every zero-shot
    dataset in ``dataset`` (also inside mmengine's dataset wrappers)
    inserts ``MaskUnseenClasses`` where its pipeline lacks it
    (:meth:`ZeroShotMixin.mask_unseen_labels`).

    Args:
        dataset: a built dataset, possibly a wrapper (``dataset`` /
            ``datasets`` attributes).
        insert (bool): insert the transform without asking (the caller
            built the loader and no worker has started yet).
    """
    if hasattr(dataset, 'mask_unseen_labels'):
        dataset.mask_unseen_labels(insert=insert)
    for inner in [
            getattr(dataset, 'dataset', None),
            *getattr(dataset, 'datasets', [])
    ]:
        if inner is not None:
            mask_unseen_labels(inner, insert)


@DATASETS.register_module()
class ZeroShotSegDataset(ZeroShotMixin, BaseSegDataset):
    """A segmentation dataset with a seen / unseen class split (the split
    logic is :class:`ZeroShotMixin`'s, shared with ``ZeroShotDataset``,
    which makes any mmseg dataset zero-shot). Subclasses give the
    protocol's default split in ``METAINFO['unseen_classes']``."""

    METAINFO: dict = dict()
