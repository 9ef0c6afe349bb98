"""Transforms of the zero-shot pipelines: label checks and unseen masking."""
from typing import Optional, Sequence

import numpy as np
from mmcv.transforms import BaseTransform

from mmseg.registry import TRANSFORMS


def reduce_label(seg: np.ndarray, reduce_zero_label: bool,
                 label_map: Optional[dict]) -> np.ndarray:
    """Apply ``label_map`` and ``reduce_zero_label`` as ``LoadAnnotations``
    does (used where a label map is read outside the pipeline)."""
    seg = seg.copy()
    if label_map:
        mapped = seg.copy()
        for old, new in label_map.items():
            mapped[seg == old] = new
        seg = mapped
    if reduce_zero_label:
        seg[seg == 0] = 255
        seg = seg - 1
        seg[seg == 254] = 255
    return seg


def check_label_values(seg: np.ndarray, num_classes: int,
                       ignore_index: int = 255, source: str = '?') -> None:
    """Raise if ``seg`` holds a value that is neither a class nor ignore."""
    values = np.unique(seg)
    bad = values[((values < 0) | (values >= num_classes))
                 & (values != ignore_index)]
    if bad.size:
        raise ValueError(
            f'{source}: label values {bad.tolist()} are neither a class '
            f'index (0..{num_classes - 1}) nor the ignore value '
            f'{ignore_index}. Check that the label maps were converted for '
            'this dataset (tools/dataset_converters) and that '
            '`reduce_zero_label` matches them.')


@TRANSFORMS.register_module()
class CheckSegLabels(BaseTransform):
    """Check ``gt_seg_map`` values after ``LoadAnnotations`` (test pipelines).

    Reads ``num_classes`` and ``ignore_index`` from the data info that every
    zero-shot dataset provides, or from the arguments. Without a label map
    (inference: ``mmseg.apis`` drops ``LoadAnnotations``) it does nothing.
    """

    def __init__(self, num_classes: Optional[int] = None,
                 ignore_index: Optional[int] = None):
        self.num_classes = num_classes
        self.ignore_index = ignore_index

    def _param(self, results: dict, name: str):
        value = getattr(self, name)
        if value is None:
            value = results.get(name)
        if value is None:
            raise KeyError(
                f'{type(self).__name__} needs `{name}`: use a zero-shot '
                'dataset (which provides it) or pass it as an argument.')
        return value

    def transform(self, results: dict) -> dict:
        if 'gt_seg_map' not in results:
            return results
        check_label_values(
            results['gt_seg_map'], self._param(results, 'num_classes'),
            self._param(results, 'ignore_index'),
            results.get('seg_map_path', '?'))
        return results


@TRANSFORMS.register_module()
class MaskUnseenClasses(CheckSegLabels):
    """Turn pixels of unseen classes into ``ignore_index`` (training only).

    Put it right after ``LoadAnnotations``. The image is kept, so the unseen
    objects stay visible but unlabelled (SPNet / CaGNet / SIGN protocol).

    Args:
        unseen_class_ids (Sequence[int], optional): class indices to mask.
            Defaults to the dataset's split, read from the data info.
        num_classes / ignore_index: as :class:`CheckSegLabels`.
    """

    def __init__(self, unseen_class_ids: Optional[Sequence[int]] = None,
                 num_classes: Optional[int] = None,
                 ignore_index: Optional[int] = None):
        super().__init__(num_classes, ignore_index)
        self.unseen_class_ids = unseen_class_ids

    def transform(self, results: dict) -> dict:
        results = super().transform(results)
        if 'gt_seg_map' not in results:
            return results
        ids = self._param(results, 'unseen_class_ids')
        seg = results['gt_seg_map']
        seg[np.isin(seg, ids)] = self._param(results, 'ignore_index')
        results['gt_seg_map'] = seg
        return results

    def __repr__(self):
        return (f'{type(self).__name__}(unseen_class_ids='
                f'{self.unseen_class_ids})')
