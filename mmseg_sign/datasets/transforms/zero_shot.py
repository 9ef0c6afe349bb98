"""Transforms of the zero-shot pipelines: label checks and unseen masking.

Every label map a zero-shot dataset reads is checked where it is read
(:class:`CheckedLoadAnnotations`, which the datasets put in place of mmseg's
``LoadAnnotations``): decodable, one channel, integer, values that survive
mmseg's cast to uint8, its image's size, and (after ``label_map`` /
``reduce_zero_label``) only class indices or the ignore value. Every error
names the file and the fix. The checks work on the array already loaded
(one ``bincount`` of a uint8 map), so they cost little next to decoding.
"""
from typing import Optional, Sequence, Tuple

import cv2
import mmcv
import mmengine.fileio as fileio
import numpy as np
from mmcv.transforms import BaseTransform
from mmseg.datasets.transforms import LoadAnnotations
from mmseg.registry import TRANSFORMS

_FIX_FORMAT = ('label maps hold one class index per pixel: a single-channel '
               "(mode 'L') or palette ('P') PNG of the image's size, values "
               '0..num_classes-1 and 255 for ignore (mmseg / '
               'tools/dataset_converters)')


def read_label_map(path: str,
                   backend_args: Optional[dict] = None,
                   imdecode_backend: str = 'pillow') -> np.ndarray:
    """Decode a label file unchanged (no cast), naming the file on
    failure (missing, truncated, not an image).

    Args:
        path (str): the label file.
        backend_args (dict, optional): mmengine's file backend arguments.
        imdecode_backend (str): mmcv's ``imfrombytes`` backend.

    Returns:
        np.ndarray: the decoded map, as stored.
    """
    try:
        data = fileio.get(path, backend_args=backend_args)
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f'{path}: label map not found; check data_root, '
            'data_prefix.seg_map_path and seg_map_suffix of the dataset.'
        ) from err
    try:
        seg = mmcv.imfrombytes(
            data, flag='unchanged', backend=imdecode_backend)
    except Exception as err:  # PIL: truncated / unidentified, cv2: ...
        raise ValueError(
            f'{path}: cannot decode the label map ({type(err).__name__}: '
            f'{err}); the file is truncated, empty or not an image. '
            f'Re-create it: {_FIX_FORMAT}.') from err
    if seg is None:  # cv2 returns None for what it cannot decode
        raise ValueError(f'{path}: cannot decode the label map; the file is '
                         f'truncated, empty or not an image. Re-create it: '
                         f'{_FIX_FORMAT}.')
    return seg


def check_raw_label(
        seg: np.ndarray,
        path: str,
        image_shape: Optional[Tuple[int, int]] = None) -> np.ndarray:
    """Checks on a decoded label map before mmseg's cast to uint8.

    Returns the map as uint8 ``H×W`` (an ``H×W×1`` map is squeezed).
    Raises ``ValueError`` naming ``path`` for a map with several channels
    (an RGB colour label), a floating-point map, values outside 0..255
    (16-bit maps: the cast would wrap them to other classes), and a size
    other than ``image_shape`` (the ``(h, w)`` of the image as loaded).

    Args:
        seg (np.ndarray): a decoded label map.
        path (str): its file, for messages.
        image_shape (tuple[int, int], optional): its image's ``(h, w)``.
    """
    if seg.ndim == 3 and seg.shape[2] == 1:
        seg = seg[..., 0]
    if seg.ndim != 2:
        shape = '×'.join(str(s) for s in seg.shape)
        kind = {
            3: 'an RGB',
            4: 'an RGBA',
            2: 'a grey + alpha'
        }.get(seg.shape[-1] if seg.ndim == 3 else 0, 'a multi-channel')
        raise ValueError(
            f'{path}: the label map is {shape}, {kind} image (a colour-coded '
            f'label?), not one class index per pixel; {_FIX_FORMAT}. '
            'Convert colour labels to class indices first.')
    if seg.dtype.kind == 'f':
        raise ValueError(f'{path}: a floating-point ({seg.dtype}) label map; '
                         f'{_FIX_FORMAT}.')
    if seg.dtype.kind not in 'biu':
        raise ValueError(f'{path}: a label map of type {seg.dtype}; '
                         f'{_FIX_FORMAT}.')
    if seg.dtype != np.uint8 and seg.dtype != np.bool_ and seg.size:
        low, high = int(seg.min()), int(seg.max())
        if low < 0 or high > 255:
            raise ValueError(
                f'{path}: a {seg.dtype} label map with values up to {high}' +
                (f' and down to {low}' if low < 0 else '') +
                "; mmseg's LoadAnnotations casts label maps to uint8, so "
                'these would wrap to other classes. Convert the maps to '
                '8-bit class indices (0..num_classes-1, 255 = ignore).')
    if image_shape is not None and tuple(seg.shape) != tuple(image_shape[:2]):
        raise ValueError(
            f'{path}: the label map is {seg.shape[0]}×{seg.shape[1]} but its '
            f'image is {image_shape[0]}×{image_shape[1]}; label maps must '
            "have their image's size (the right file for this image?).")
    return seg.astype(np.uint8, copy=False)


def apply_lut(seg: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """``lut[seg]`` for a uint8 map and a 256-entry uint8 table
    (``cv2.LUT``: several times faster than numpy's fancy indexing).

    Args:
        seg (np.ndarray): a uint8 map.
        lut (np.ndarray): a uint8 table ``[256]``.

    Returns:
        np.ndarray: the mapped uint8 map.
    """
    return cv2.LUT(np.ascontiguousarray(seg), lut).reshape(seg.shape)


def reduce_label(seg: np.ndarray, reduce_zero_label: bool,
                 label_map: Optional[dict]) -> np.ndarray:
    """Apply ``reduce_zero_label``, then ``label_map``, to a uint8 map as
    mmseg 1.x's ``LoadAnnotations`` does (in one table look-up).

    Args:
        seg (np.ndarray): a uint8 map.
        reduce_zero_label (bool): 0 → ignore, v → v - 1.
        label_map (dict, optional): ``{old: new}`` after the reduction.

    Returns:
        np.ndarray: the uint8 map.
    """
    if not label_map and not reduce_zero_label:
        return seg.astype(np.uint8, copy=False)
    lut = np.arange(256, dtype=np.uint8)
    if reduce_zero_label:  # 0 -> 255, v -> v - 1, 255 stays 255
        lut = np.where(lut == 0, 255, lut - 1).astype(np.uint8)
        lut[lut == 254] = 255
    if label_map:  # value v (after the reduction) -> label_map.get(v, v)
        table = np.arange(256, dtype=np.uint8)
        for old, new in label_map.items():
            if 0 <= old < 256:
                table[old] = new
        lut = table[lut]
    return apply_lut(seg, lut)


def present_values(seg: np.ndarray) -> np.ndarray:
    """The sorted distinct values of a label map (``bincount`` for uint8:
    linear time, no sort of the pixels).

    Args:
        seg (np.ndarray): a label map.

    Returns:
        np.ndarray: its values.
    """
    if seg.dtype == np.uint8:
        return np.flatnonzero(np.bincount(seg.ravel(), minlength=256))
    return np.unique(seg)


def check_label_values(seg: np.ndarray,
                       num_classes: int,
                       ignore_index: int = 255,
                       source: str = '?',
                       reduce_zero_label: Optional[bool] = None) -> None:
    """Raise if ``seg`` holds a value that is neither a class nor ignore.

    For uint8 maps (what ``LoadAnnotations`` gives) this is a ``max`` and,
    when the map holds the ignore value, one masked comparison.

    Args:
        seg (np.ndarray): a label map after ``reduce_zero_label``.
        num_classes (int): the class count.
        ignore_index (int): the ignore value.
        source (str): the file, for the message.
        reduce_zero_label (bool, optional): for the message's hint.

    Raises:
        ValueError: naming the file and the bad values.
    """
    if seg.dtype == np.uint8:
        if not seg.size or int(seg.max()) < num_classes:
            return
        out = seg >= num_classes
        if 0 <= ignore_index < 256:
            out &= seg != ignore_index
        if not out.any():
            return
        bad = np.unique(seg[out])
    else:
        values = np.unique(seg)
        bad = values[((values < 0) | (values >= num_classes))
                     & (values != ignore_index)]
        if not bad.size:
            return
    hint = ('Check that the label maps were converted for this dataset '
            '(tools/dataset_converters) and that `reduce_zero_label` '
            'matches them.')
    if reduce_zero_label is False and bad.tolist() == [num_classes]:
        hint = ('The maps look 1-based (0 = background): set '
                'reduce_zero_label=True on the dataset.')
    raise ValueError(
        f'{source}: label values {bad.tolist()} are neither a class index '
        f'(0..{num_classes - 1}) nor the ignore value {ignore_index}. ' + hint)


class CheckedLoadAnnotations(LoadAnnotations):
    """mmseg's ``LoadAnnotations`` with every label map checked as it is
    read (:func:`read_label_map`, :func:`check_raw_label`, and the values
    against ``num_classes`` / ``ignore_index`` of the data info).

    Zero-shot datasets put it in place of each ``LoadAnnotations`` of their
    pipelines (:func:`checked_load_annotations`); the output is the same.
    """

    def _load_seg_map(self, results: dict) -> None:
        path = results['seg_map_path']
        shape = results.get('ori_shape')
        if shape is not None and min(shape[:2]) < 2:
            raise ValueError(
                f"{results.get('img_path', '?')} (labels {path}): the image "
                f'is {shape[0]}×{shape[1]}, too small to segment (flips and '
                "mmseg's PackSegInputs fail on a 1-pixel side). Remove it "
                "from the dataset's list (ann_file).")
        seg = read_label_map(path, getattr(self, 'backend_args', None),
                             self.imdecode_backend)
        seg = check_raw_label(seg, path, results.get('ori_shape'))
        if self.reduce_zero_label is None:
            self.reduce_zero_label = results['reduce_zero_label']
        if self.reduce_zero_label != results['reduce_zero_label']:
            raise ValueError(
                f'LoadAnnotations(reduce_zero_label={self.reduce_zero_label})'
                f' but the dataset has reduce_zero_label='
                f"{results['reduce_zero_label']}; set it on the dataset "
                'only.')
        seg = reduce_label(seg, self.reduce_zero_label,
                           results.get('label_map'))
        if results.get('num_classes') is not None:
            check_label_values(seg, results['num_classes'],
                               results.get('ignore_index', 255), path,
                               self.reduce_zero_label)
        results['gt_seg_map'] = seg
        results['seg_fields'].append('gt_seg_map')


def checked_load_annotations(transform):
    """A :class:`CheckedLoadAnnotations` with the state of mmseg's
    ``LoadAnnotations`` ``transform`` (other transforms: unchanged).

    Args:
        transform: a pipeline transform.

    Returns:
        the checked transform, or ``transform``.
    """
    if type(transform) is not LoadAnnotations:
        return transform
    checked = CheckedLoadAnnotations.__new__(CheckedLoadAnnotations)
    checked.__dict__.update(transform.__dict__)
    return checked


@TRANSFORMS.register_module()
class CheckSegLabels(BaseTransform):
    """Check ``gt_seg_map`` values after ``LoadAnnotations``.

    Marks an evaluation pipeline of a zero-shot dataset (unseen labels are
    kept and scored). Reads ``num_classes`` and ``ignore_index`` from the
    data info that every zero-shot dataset provides, or from the arguments.
    Without a label map (inference: ``mmseg.apis`` drops
    ``LoadAnnotations``) it does nothing.
    """

    def __init__(self,
                 num_classes: Optional[int] = None,
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
        check_label_values(results['gt_seg_map'],
                           self._param(results, 'num_classes'),
                           self._param(results, 'ignore_index'),
                           results.get('seg_map_path', '?'))
        return results


@TRANSFORMS.register_module()
class MaskUnseenClasses(CheckSegLabels):
    """Turn pixels of unseen classes into ``ignore_index`` (training only).

    Put it right after ``LoadAnnotations``: it marks the training pipeline
    of a zero-shot dataset. The image is kept, so the unseen objects stay
    visible but unlabelled (SPNet / CaGNet / SIGN protocol).

    Args:
        unseen_class_ids (Sequence[int], optional): class indices to mask.
            Defaults to the dataset's split, read from the data info.
        num_classes / ignore_index: as :class:`CheckSegLabels`.
    """

    def __init__(self,
                 unseen_class_ids: Optional[Sequence[int]] = None,
                 num_classes: Optional[int] = None,
                 ignore_index: Optional[int] = None):
        super().__init__(num_classes, ignore_index)
        self.unseen_class_ids = unseen_class_ids

    def transform(self, results: dict) -> dict:
        results = super().transform(results)
        if 'gt_seg_map' not in results:
            return results
        ids = list(self._param(results, 'unseen_class_ids'))
        if not ids:
            return results
        seg = results['gt_seg_map']
        ignore = self._param(results, 'ignore_index')
        if seg.dtype == np.uint8 and 0 <= ignore < 256 and seg.ndim == 2:
            lut = np.arange(256, dtype=np.uint8)
            lut[[i for i in ids if 0 <= i < 256]] = ignore
            seg = apply_lut(seg, lut)
        else:
            seg = seg.copy()
            seg[np.isin(seg, ids)] = ignore
        results['gt_seg_map'] = seg
        return results

    def __repr__(self):
        return (f'{type(self).__name__}(unseen_class_ids='
                f'{self.unseen_class_ids})')
