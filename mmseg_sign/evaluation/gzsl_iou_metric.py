"""Generalized zero-shot IoU: seen / unseen / harmonic mIoU (the paper's
Table 1: hIoU = 2·S·U / (S + U); see docs/reproduction.md)."""
import inspect
import json
import logging
import math
import numbers
import os
import os.path as osp
from collections import OrderedDict
from collections.abc import Iterable
from typing import Dict, Optional, Sequence, Union

import numpy as np
import torch
from mmengine.dist import all_reduce, is_main_process
from mmengine.logging import MMLogger, print_log
from mmseg.evaluation import IoUMetric
from mmseg.registry import METRICS
from prettytable import PrettyTable

from ..structures.class_split import resolve_split
from .bootstrap import bootstrap_gzsl


def harmonic_mean(seen: float, unseen: float) -> float:
    """``2·s·u / (s + u)``; 0 when both are 0, nan when either is nan.

    Args:
        seen (float): seen mIoU.
        unseen (float): unseen mIoU.

    Returns:
        float: their harmonic mean.
    """
    if np.isnan(seen) or np.isnan(unseen):
        return float('nan')
    total = seen + unseen
    return 0.0 if total == 0 else 2 * seen * unseen / total


def ausuc(seen: Sequence[float], unseen: Sequence[float]) -> float:
    """Area under the unseen-vs-seen curve of a calibration sweep.

    Points with a nan coordinate are dropped; the rest are sorted by seen
    mIoU (ties by unseen mIoU) and joined by straight lines; the area is the
    trapezoid sum of ``unseen d(seen)`` over that polyline only (no points
    are added at the axes), with both axes in percent, divided by 100, so a
    value lies in ``[0, 100]``. Fewer than two points give 0.

    Args:
        seen (Sequence[float]): seen mIoU (%) of each calibration value.
        unseen (Sequence[float]): unseen mIoU (%) of each.

    Returns:
        float: the area, in ``[0, 100]``.
    """
    pts = sorted((s, u) for s, u in zip(seen, unseen)
                 if not (np.isnan(s) or np.isnan(u)))
    area = 0.0
    for (s0, u0), (s1, u1) in zip(pts, pts[1:]):
        area += (s1 - s0) * (u0 + u1) / 2
    return area / 100


def check_calibration_sweep(sweep) -> Optional[list]:
    """``sweep`` as a list of floats, or ``None``; a ValueError naming the
    problem for anything but a non-empty list (tuple, array) of finite real
    numbers. A string would be iterated per character (``'05'`` as γ = 0,
    5), a lone number would fail as a raw TypeError and a nan γ would
    enter AUSUC.

    Args:
        sweep: the metric's ``calibration_sweep``.

    Returns:
        list[float] | None: the calibration values.
    """
    if sweep is None:
        return None
    example = 'e.g. calibration_sweep=[0.0, 0.5, 1.0]'
    if isinstance(sweep, (str, bytes, numbers.Number)) or \
            not isinstance(sweep, Iterable):
        raise ValueError(
            'GZSLIoUMetric: calibration_sweep must be a list of numbers '
            f'(the calibration values γ), got {sweep!r} (a '
            f'{type(sweep).__name__}); {example} (on the command line: '
            'test_evaluator.calibration_sweep="[0.0,0.5,1.0]"), or [0.5] '
            'for one value.')
    values = list(sweep)
    if not values:
        raise ValueError(f'GZSLIoUMetric: calibration_sweep is empty; '
                         f'{example}.')
    for i, gamma in enumerate(values):
        if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
            raise ValueError(
                f'GZSLIoUMetric: calibration_sweep[{i}] is {gamma!r} (a '
                f'{type(gamma).__name__}), not a number; {example}.')
        if not math.isfinite(gamma):
            raise ValueError(
                f'GZSLIoUMetric: calibration_sweep[{i}] is {gamma}; every '
                f'calibration value γ must be finite; {example}.')
    return [float(g) for g in values]


#: the arguments mmseg's IoUMetric takes by name (its ``**kwargs`` are
#: dropped, so a misspelled one would be ignored without a word)
IOU_METRIC_ARGS = tuple(
    name for name, p in inspect.signature(IoUMetric).parameters.items()
    if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)) + (
        'keep_results', )  # set by mmseg's tools/test.py --out; unused
GZSL_ARGS = ('seen_classes', 'unseen_classes', 'calibration_sweep',
             'calibration_dir', 'bootstrap', 'per_class')


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
        calibration_sweep (Sequence[float], optional): calibration values
            γ (SPNet's calibrated stacking). For each γ, γ is subtracted from
            every seen-class score of the ``seg_logits`` the segmentor puts
            in each data sample (``[K, H, W]``, original image size), the
            argmax is scored and seen / unseen / harmonic mIoU are reported
            per γ (a logged table and ``calibration_sweep.json``). Each image
            adds its per-class intersection and prediction counts to one
            running ``[len(sweep), 2, K]`` sum (summed over processes in
            :meth:`evaluate`; memory does not grow with the test set; no
            logits are kept, and the size does not depend on the image size;
            like :class:`IoUMetric`'s per-image counts it gathers across
            ranks). Ties between a seen and an unseen score go to the lower
            class index, as ``argmax`` does. Default: None (no sweep).
        bootstrap (int): with B > 0, also ``mIoU_seen_boot_sd``,
            ``mIoU_unseen_boot_sd`` and ``hIoU_boot_sd``: each score's sd
            over B resamples of the scored images (with replacement, a
            private generator of seed 0; :func:`bootstrap_gzsl`), how much
            it owes to which images were scored. Default: 0 (none).
        per_class (bool): also return ``IoU.CLASS`` for every class (the
            per-class table as metrics: logged as scalars, so that tables
            over runs, e.g. ``tools/toy_table.py``, keep them). Default:
            False (the table is printed only).
        calibration_dir (str, optional): where ``calibration_sweep.json`` is
            written. Default: ``output_dir`` if set, else ``calibration/``
            in the Runner's log directory (``WORK_DIR/TIMESTAMP/
            calibration/``; a subfolder, so that the metrics json stays
            the only json in ``WORK_DIR/TIMESTAMP``); nothing is written
            when none is known.
        **kwargs: passed to :class:`mmseg.evaluation.IoUMetric`
            (``iou_metrics`` is fixed to ``['mIoU']``).

    Returns (percent, 2 decimals): ``aAcc``, ``mIoU``, ``mAcc``,
    ``mIoU_seen``, ``mIoU_unseen``, ``hIoU`` (from ``pred_sem_seg``); with a
    sweep also ``hIoU_best`` (the largest harmonic mIoU of the sweep),
    ``calibration_best`` (its γ, the first one on a tie) and ``AUSUC``: the
    area under the unseen-vs-seen mIoU curve of the sweep points (sorted by
    seen mIoU, trapezoids between consecutive points only, both axes in
    percent, divided by 100; see :func:`ausuc`).
    """

    def __init__(self,
                 seen_classes: Optional[Sequence[Union[str, int]]] = None,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 calibration_sweep: Optional[Sequence[float]] = None,
                 calibration_dir: Optional[str] = None,
                 bootstrap: int = 0,
                 per_class: bool = False,
                 **kwargs) -> None:
        unknown = sorted(set(kwargs) - set(IOU_METRIC_ARGS))
        if unknown:
            raise ValueError(
                f'GZSLIoUMetric: unknown arguments {unknown}; its own: '
                f'{sorted(GZSL_ARGS)}, and mmseg IoUMetric\'s: '
                f'{sorted(IOU_METRIC_ARGS)}.')
        if kwargs.setdefault('iou_metrics', ['mIoU']) != ['mIoU']:
            raise ValueError('GZSLIoUMetric computes IoU only; for Dice or '
                             'F-score add a separate IoUMetric.')
        super().__init__(**kwargs)
        self.seen_classes = seen_classes
        self.unseen_classes = unseen_classes
        self.calibration_sweep = check_calibration_sweep(calibration_sweep)
        # per-γ intersection / prediction counts summed over the images
        # seen so far: memory does not grow with the test set
        self._sweep_sum: Optional[torch.Tensor] = None
        self.calibration_dir = calibration_dir
        if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) \
                or bootstrap < 0 or bootstrap == 1:
            raise ValueError(f'GZSLIoUMetric: bootstrap is the number of '
                             f'resamples (0: none, or >= 2), got '
                             f'{bootstrap!r}.')
        self.bootstrap = bootstrap
        if not isinstance(per_class, bool):
            raise ValueError(f'GZSLIoUMetric: per_class is True or False, '
                             f'got {per_class!r}.')
        self.per_class = per_class

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

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """:meth:`IoUMetric.process` (counts from ``pred_sem_seg``); with a
        sweep, adds each image's ``[len(sweep), 2, K]`` intersection /
        prediction counts to one running sum."""
        super().process(data_batch, data_samples)
        if self.calibration_sweep is None or self.format_only:
            return
        for sample in data_samples:
            counts = self.sweep_counts(sample).long()
            self._sweep_sum = counts if self._sweep_sum is None else \
                self._sweep_sum + counts

    def evaluate(self, size: int) -> dict:
        """Sums the sweep counts of every process (one ``[G, 2, K]``
        tensor each), then :meth:`BaseMetric.evaluate`."""
        if self.calibration_sweep is not None and not self.format_only:
            if self._sweep_sum is None:  # this process scored no image
                self._sweep_sum = torch.zeros(
                    len(self.calibration_sweep),
                    2,
                    len(self.dataset_meta['classes']),
                    dtype=torch.long)
            all_reduce(self._sweep_sum, op='sum')
        try:
            return super().evaluate(size)
        finally:
            self._sweep_sum = None

    def sweep_counts(self, sample: dict) -> torch.Tensor:
        """Per-γ ``[G, 2, K]`` counts (intersection, prediction) of one
        image, with the pixels :meth:`IoUMetric.intersect_and_union`
        scores (label != ignore_index)."""
        if 'seg_logits' not in sample:
            raise KeyError(
                'GZSLIoUMetric(calibration_sweep=...) needs the `seg_logits` '
                'that mmseg segmentors put in each data sample; this one has '
                'only ' + ', '.join(sorted(sample.keys())))
        logits = sample['seg_logits']['data']
        label = sample['gt_sem_seg']['data'].squeeze(0)
        num_classes = len(self.dataset_meta['classes'])
        if logits.dim() != 3 or logits.shape[0] != num_classes or \
                logits.shape[1:] != label.shape:
            raise ValueError(
                f'GZSLIoUMetric: seg_logits of shape {tuple(logits.shape)} '
                f'do not match {num_classes} classes and the label shape '
                f'{tuple(label.shape)}.')
        unseen = torch.from_numpy(self.split_mask()).to(logits.device)
        mask = label != self.ignore_index
        label = label[mask].long()
        scores = logits.permute(1, 2, 0)[mask]  # [P, K]
        neg_inf = torch.finfo(scores.dtype).min
        s_max, s_idx = scores.masked_fill(unseen, neg_inf).max(dim=1)
        u_max, u_idx = scores.masked_fill(~unseen, neg_inf).max(dim=1)
        out = torch.zeros(
            len(self.calibration_sweep), 2, num_classes, dtype=torch.int32)
        for g, gamma in enumerate(self.calibration_sweep):
            shifted = s_max - gamma
            take_seen = (shifted > u_max) | ((shifted == u_max) &
                                             (s_idx < u_idx))
            pred = torch.where(take_seen, s_idx, u_idx)
            hit = pred[pred == label]
            out[g, 0] = torch.bincount(hit, minlength=num_classes).cpu()
            out[g, 1] = torch.bincount(pred, minlength=num_classes).cpu()
        return out

    def compute_metrics(self, results: list) -> Dict[str, float]:
        logger: MMLogger = MMLogger.get_current_instance()
        if self.format_only:
            return super().compute_metrics(results)
        unseen = self.split_mask()
        # sum the per-image float32 histograms in float64: float32 sums stop
        # counting exactly past 2**24 pixels (a few hundred images)
        intersect, union, _, label = (
            sum(t.double() for t in r).numpy()
            for r in zip(*(res[:4] for res in results)))
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
        if self.per_class:
            metrics.update(
                (f'IoU.{name}', float(np.round(v * 100, 2)))
                for name, v in zip(self.dataset_meta['classes'], iou))
        if self.bootstrap:
            per_image = [
                np.stack([r[i].double().numpy() for r in results])
                for i in (0, 1)
            ]  # intersection, union: [N, K]
            metrics.update(bootstrap_gzsl(*per_image, unseen, self.bootstrap))
        if self.calibration_sweep is not None:
            metrics.update(self.sweep_metrics(results, label, unseen, logger))
        return dict(metrics)

    def sweep_metrics(self, results: list, label: np.ndarray,
                      unseen: np.ndarray, logger: MMLogger) -> dict:
        """Per-γ seen / unseen / harmonic mIoU from the summed counts; logs
        the table, writes ``calibration_sweep.json``; returns
        ``hIoU_best``, ``calibration_best`` and ``AUSUC``."""
        counts = self._sweep_sum.double().numpy()  # [G, 2, K]
        rows = []
        for gamma, (inter, pred) in zip(self.calibration_sweep, counts):
            with np.errstate(divide='ignore', invalid='ignore'):
                iou = inter / (pred + label - inter)
            if self.nan_to_num is not None:
                iou = np.nan_to_num(iou, nan=self.nan_to_num)
            seen_miou = _nanmean(iou[~unseen]) * 100
            unseen_miou = _nanmean(iou[unseen]) * 100
            rows.append(
                dict(
                    gamma=gamma,
                    mIoU_seen=seen_miou,
                    mIoU_unseen=unseen_miou,
                    hIoU=harmonic_mean(seen_miou, unseen_miou),
                    mIoU=_nanmean(iou) * 100))
        hious = np.array([r['hIoU'] for r in rows])
        if np.isnan(hious).all():
            best = None
        else:
            best = int(np.nanargmax(hious))  # first on a tie
        area = ausuc([r['mIoU_seen'] for r in rows],
                     [r['mIoU_unseen'] for r in rows])
        out = dict(
            hIoU_best=float(np.round(hious[best], 2))
            if best is not None else float('nan'),
            calibration_best=rows[best]['gamma']
            if best is not None else float('nan'),
            AUSUC=float(np.round(area, 2)))

        table = PrettyTable(
            ['gamma', 'mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU'])
        for i, r in enumerate(rows):
            table.add_row([f"{r['gamma']:g}" + (' *' if i == best else '')] +
                          [round(r[k], 2) for k in table.field_names[1:]])
        print_log(
            'calibration sweep (γ subtracted from seen-class scores; * '
            f"best hIoU): AUSUC {out['AUSUC']}\n" + table.get_string(),
            logger=logger)

        out_dir = self.calibration_dir or self.output_dir or _log_dir(logger)
        if out_dir and is_main_process():
            os.makedirs(out_dir, exist_ok=True)
            path = osp.join(out_dir, 'calibration_sweep.json')
            with open(path, 'w') as f:
                json.dump(
                    dict(
                        points=[{
                            k: float(np.round(v, 4))
                            for k, v in r.items()
                        } for r in rows],
                        **out,
                        ausuc_convention=(
                            'points sorted by mIoU_seen, trapezoids between '
                            'consecutive points, both axes in percent, area '
                            '/ 100')),
                    f,
                    indent=2)
            print_log(
                f'calibration sweep curve written to {path}', logger=logger)
        return out


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else np.nan


def _log_dir(logger: logging.Logger) -> Optional[str]:
    """``calibration/`` next to the logger's log file (in the Runner's
    log_dir)."""
    for handler in getattr(logger, 'handlers', []):
        if isinstance(handler, logging.FileHandler):
            return osp.join(osp.dirname(handler.baseFilename), 'calibration')
    return None
