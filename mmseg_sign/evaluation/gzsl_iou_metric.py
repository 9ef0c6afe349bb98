"""Generalized zero-shot IoU: seen / unseen / harmonic mIoU (the paper's
Table 1: hIoU = 2·S·U / (S + U); see docs/reproduction.md)."""
from collections import OrderedDict
from typing import Dict, Optional, Sequence, Union

import numpy as np
from mmengine.logging import MMLogger, print_log
from prettytable import PrettyTable

from mmseg.evaluation import IoUMetric
from mmseg.registry import METRICS
from ..datasets.zero_shot import resolve_split


def harmonic_mean(seen: float, unseen: float) -> float:
    """``2·s·u / (s + u)``; 0 when both are 0, nan when either is nan."""
    if np.isnan(seen) or np.isnan(unseen):
        return float('nan')
    total = seen + unseen
    return 0.0 if total == 0 else 2 * seen * unseen / total


@METRICS.register_module()
class GZSLIoUMetric(IoUMetric):
    """IoU metric that also reports the seen / unseen / harmonic mIoU.

    One confusion accumulation over the whole set (as :class:`IoUMetric`,
    distributed-safe), then per-class IoU; ``mIoU_seen`` and ``mIoU_unseen``
    are nan-means over the classes of each group (a class absent from both
    prediction and label is left out) and ``hIoU = 2·S·U / (S + U)``.

    Args:
        seen_classes / unseen_classes (Sequence[str | int], optional): the
            split as class names or indices. Default: read from
            ``dataset_meta`` (every zero-shot dataset provides it).
        **kwargs: passed to :class:`mmseg.evaluation.IoUMetric`
            (``iou_metrics`` is fixed to ``['mIoU']``).

    Returns (percent, 2 decimals): ``aAcc``, ``mIoU``, ``mAcc``,
    ``mIoU_seen``, ``mIoU_unseen``, ``hIoU``.
    """

    def __init__(self,
                 seen_classes: Optional[Sequence[Union[str, int]]] = None,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 **kwargs) -> None:
        if kwargs.setdefault('iou_metrics', ['mIoU']) != ['mIoU']:
            raise ValueError('GZSLIoUMetric computes IoU only; for Dice or '
                             'F-score add a separate IoUMetric.')
        super().__init__(**kwargs)
        self.seen_classes = seen_classes
        self.unseen_classes = unseen_classes

    def split_mask(self) -> np.ndarray:
        """Boolean ``[num_classes]``: True for unseen classes."""
        meta = self.dataset_meta or {}
        classes = meta.get('classes')
        if classes is None:
            raise RuntimeError('GZSLIoUMetric needs `dataset_meta` with '
                               '`classes`; it is set by the Runner from the '
                               'dataset.')
        seen, unseen = self.seen_classes, self.unseen_classes
        if seen is None and unseen is None:
            seen, unseen = meta.get('seen_classes'), meta.get('unseen_classes')
        if seen is None and unseen is None:
            raise ValueError(
                'GZSLIoUMetric: no seen/unseen split. Use a zero-shot dataset '
                '(its metainfo carries `unseen_classes`) or pass '
                '`unseen_classes=[...]` to the metric.')
        _, unseen = resolve_split(classes, seen, unseen)
        if not unseen:
            raise ValueError('GZSLIoUMetric: the unseen set is empty, so '
                             'unseen and harmonic mIoU are undefined; use '
                             'IoUMetric instead.')
        return np.array([c in unseen for c in classes])

    def compute_metrics(self, results: list) -> Dict[str, float]:
        logger: MMLogger = MMLogger.get_current_instance()
        if self.format_only:
            return super().compute_metrics(results)
        unseen = self.split_mask()
        # sum the per-image float32 histograms in float64: float32 sums stop
        # counting exactly past 2**24 pixels (a few hundred images)
        intersect, union, _, label = (
            sum(t.double() for t in r).numpy() for r in zip(*results))
        with np.errstate(divide='ignore', invalid='ignore'):
            iou = intersect / union
            acc = intersect / label
            all_acc = intersect.sum() / label.sum()
        if self.nan_to_num is not None:
            iou = np.nan_to_num(iou, nan=self.nan_to_num)
            acc = np.nan_to_num(acc, nan=self.nan_to_num)

        def nanmean(x):
            return float(np.nanmean(x)) if np.isfinite(x).any() else np.nan

        seen_miou, unseen_miou = nanmean(iou[~unseen]), nanmean(iou[unseen])
        metrics = OrderedDict(
            aAcc=all_acc,
            mIoU=nanmean(iou),
            mAcc=nanmean(acc),
            mIoU_seen=seen_miou,
            mIoU_unseen=unseen_miou,
            hIoU=harmonic_mean(seen_miou, unseen_miou))
        metrics = OrderedDict(
            (k, float(np.round(v * 100, 2))) for k, v in metrics.items())

        table = PrettyTable()
        table.add_column('Class', list(self.dataset_meta['classes']))
        table.add_column('Split', ['unseen' if u else 'seen' for u in unseen])
        table.add_column('IoU', np.round(iou * 100, 2).tolist())
        table.add_column('Acc', np.round(acc * 100, 2).tolist())
        print_log('per class results:', logger)
        print_log('\n' + table.get_string(), logger=logger)
        summary = PrettyTable(['mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU'])
        summary.add_row([metrics[k] for k in summary.field_names])
        print_log('GZSL summary:\n' + summary.get_string(), logger=logger)
        return dict(metrics)
