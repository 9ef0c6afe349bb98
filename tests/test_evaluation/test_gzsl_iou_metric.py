"""GZSLIoUMetric against a naive numpy confusion-matrix implementation."""
import numpy as np
import pytest
import torch

from mmseg_sign.evaluation import GZSLIoUMetric, harmonic_mean

CLASSES = ('a', 'b', 'c', 'd', 'e', 'f')
UNSEEN = ('c', 'f')


def naive_gzsl(preds, labels, num_classes, unseen_ids, ignore=255):
    """Confusion matrix by explicit loops over pixels, then the formulas."""
    conf = np.zeros((num_classes, num_classes), dtype=np.int64)
    for pred, label in zip(preds, labels):
        for p, t in zip(pred.ravel(), label.ravel()):
            if t != ignore:
                conf[t, p] += 1
    ious = []
    for c in range(num_classes):
        tp = conf[c, c]
        union = conf[c, :].sum() + conf[:, c].sum() - tp
        ious.append(tp / union if union > 0 else np.nan)
    ious = np.array(ious)
    seen_ids = [c for c in range(num_classes) if c not in unseen_ids]
    s = np.nanmean(ious[seen_ids])
    u = np.nanmean(ious[unseen_ids])
    return dict(
        ious=ious,
        aAcc=np.trace(conf) / conf.sum(),
        mIoU=np.nanmean(ious),
        mIoU_seen=s,
        mIoU_unseen=u,
        hIoU=2 * s * u / (s + u))


def run_metric(metric, preds, labels):
    for pred, label in zip(preds, labels):
        sample = dict(
            pred_sem_seg=dict(data=torch.from_numpy(pred)[None]),
            gt_sem_seg=dict(data=torch.from_numpy(label)[None]))
        metric.process({}, [sample])
    return metric.compute_metrics(metric.results)


def random_batch(seed, absent=4):
    """Random predictions/labels over 6 classes; class ``absent`` appears in
    neither, and some pixels are ignored."""
    rng = np.random.default_rng(seed)
    preds, labels = [], []
    for _ in range(3):
        label = rng.choice([0, 1, 2, 3, 5], size=(13, 17))
        label[rng.random(label.shape) < 0.1] = 255
        pred = np.where(
            rng.random(label.shape) < 0.6, label,
            rng.choice([0, 1, 2, 3, 5], size=label.shape))
        pred[pred == 255] = 0
        preds.append(pred.astype(np.int64))
        labels.append(label.astype(np.int64))
    return preds, labels


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_gzsl_metric_matches_naive_confusion_matrix(seed):
    preds, labels = random_batch(seed)
    metric = GZSLIoUMetric()
    metric.dataset_meta = dict(
        classes=CLASSES,
        seen_classes=('a', 'b', 'd', 'e'),
        unseen_classes=UNSEEN)
    got = run_metric(metric, preds, labels)
    want = naive_gzsl(preds, labels, len(CLASSES), [2, 5])
    assert np.isnan(want['ious'][4])  # absent class is left out of the means
    for key in ('aAcc', 'mIoU', 'mIoU_seen', 'mIoU_unseen', 'hIoU'):
        assert got[key] == pytest.approx(100 * want[key], abs=0.006), key
    assert set(got) == {
        'aAcc', 'mIoU', 'mAcc', 'mIoU_seen', 'mIoU_unseen', 'hIoU'
    }


def test_split_from_metric_arguments_by_index_overrides_meta():
    preds, labels = random_batch(3)
    metric = GZSLIoUMetric(unseen_classes=[0, 1])
    metric.dataset_meta = dict(classes=CLASSES, unseen_classes=UNSEEN)
    got = run_metric(metric, preds, labels)
    want = naive_gzsl(preds, labels, len(CLASSES), [0, 1])
    assert got['mIoU_unseen'] == pytest.approx(
        100 * want['mIoU_unseen'], abs=0.006)
    assert got['hIoU'] == pytest.approx(100 * want['hIoU'], abs=0.006)


def test_hand_worked_example():
    # classes a (seen), b (unseen); 4 pixels: label a a b b, pred a b b b
    # IoU_a = 1 / 2, IoU_b = 2 / 3, h = 2 * (1/2) * (2/3) / (1/2 + 2/3)
    pred = np.array([[0, 1, 1, 1]])
    label = np.array([[0, 0, 1, 1]])
    metric = GZSLIoUMetric()
    metric.dataset_meta = dict(classes=('a', 'b'), unseen_classes=('b', ))
    got = run_metric(metric, [pred], [label])
    assert got['mIoU_seen'] == 50.0
    assert got['mIoU_unseen'] == 66.67
    assert got['hIoU'] == pytest.approx(100 * 4 / 7, abs=0.006)
    assert got['aAcc'] == 75.0


@pytest.mark.parametrize('seed', [0, 1])
def test_per_class_iou_as_metrics(seed):
    """``per_class=True``: every class's IoU as ``IoU.NAME``, the naive
    confusion matrix's (an absent class: nan), the other metrics kept."""
    preds, labels = random_batch(seed)
    metric = GZSLIoUMetric(per_class=True)
    metric.dataset_meta = dict(classes=CLASSES, unseen_classes=UNSEEN)
    got = run_metric(metric, preds, labels)
    want = naive_gzsl(preds, labels, len(CLASSES), [2, 5])
    for name, iou in zip(CLASSES, want['ious']):
        if np.isnan(iou):
            assert np.isnan(got[f'IoU.{name}'])
        else:
            assert got[f'IoU.{name}'] == pytest.approx(100 * iou, abs=0.006)
    assert got['hIoU'] == pytest.approx(100 * want['hIoU'], abs=0.006)
    with pytest.raises(ValueError, match='per_class is True or False'):
        GZSLIoUMetric(per_class='yes')


def test_harmonic_mean_edge_cases():
    assert harmonic_mean(0.0, 0.0) == 0.0
    assert harmonic_mean(0.5, 0.0) == 0.0
    assert np.isnan(harmonic_mean(np.nan, 0.3))


def test_split_errors_are_clear():
    metric = GZSLIoUMetric()
    metric.dataset_meta = dict(classes=CLASSES)
    with pytest.raises(ValueError, match='no seen/unseen split'):
        metric.split_mask()
    metric = GZSLIoUMetric(unseen_classes=['zebra'])
    metric.dataset_meta = dict(classes=CLASSES)
    with pytest.raises(ValueError, match="unknown class name 'zebra'"):
        metric.split_mask()
    metric = GZSLIoUMetric(seen_classes=list(CLASSES))
    metric.dataset_meta = dict(classes=CLASSES)
    with pytest.raises(ValueError, match='unseen set is empty'):
        metric.split_mask()
    with pytest.raises(ValueError, match='IoU only'):
        GZSLIoUMetric(iou_metrics=['mDice'])


def test_a_misspelled_argument_is_an_error():
    """mmseg's IoUMetric drops unknown ``**kwargs``, so
    ``calibraton_sweep=[...]`` gave no sweep and no word."""
    with pytest.raises(
            ValueError,
            match=r"unknown arguments "
            r"\['calibraton_sweep'\]; its own: \['bootstrap', "
            r"'calibration_dir', 'calibration_sweep'"):
        GZSLIoUMetric(calibraton_sweep=[0.0, 1.0])
    metric = GZSLIoUMetric(
        calibration_sweep=[0.0, 1.0], nan_to_num=0,
        prefix='gzsl')  # IoUMetric's own, by name
    assert metric.prefix == 'gzsl' and metric.nan_to_num == 0
