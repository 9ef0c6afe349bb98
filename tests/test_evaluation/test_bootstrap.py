"""mmseg_sign/evaluation/bootstrap.py and GZSLIoUMetric(bootstrap=B): the
spread of the GZSL scores over resamples of the test images, against the
exact bootstrap distribution of a hand-worked two-image example and a naive
resampling loop."""
import numpy as np
import pytest
import torch

from mmseg_sign.evaluation import GZSLIoUMetric
from mmseg_sign.evaluation.bootstrap import bootstrap_gzsl


def test_two_images_by_hand():
    # class 0 seen, class 1 unseen. Image 1: c0 10/10, c1 0/10; image 2:
    # c0 5/10, c1 5/5. The three resamples and their harmonic mIoU:
    # (1, 1): h = 0; (2, 2): seen 50, unseen 100, h = 66.667; (1, 2) (p
    # 1/2): seen 15/20 = 75, unseen 5/15 = 33.33, h = 46.154. Their sd:
    h = np.array([0.0, 66.6667, 46.1538])
    p = np.array([0.25, 0.25, 0.5])
    sd = np.sqrt(p @ h**2 - (p @ h)**2)  # 24.43
    inter = np.array([[10, 0], [5, 5]])
    union = np.array([[10, 10], [10, 5]])
    out = bootstrap_gzsl(
        inter, union, np.array([False, True]), resamples=20000, seed=1)
    assert out['hIoU_boot_sd'] == pytest.approx(sd, abs=0.5)
    # seen: 100, 50, 75 -> sd 17.68; unseen: 0, 100, 33.3 -> sd 36.0
    seen = np.array([100, 50, 75.0])
    uns = np.array([0, 100, 100 / 3])
    for key, x in (('mIoU_seen', seen), ('mIoU_unseen', uns)):
        assert out[f'{key}_boot_sd'] == pytest.approx(
            np.sqrt(p @ x**2 - (p @ x)**2), abs=0.5)


def test_matches_a_naive_resampling_loop():
    rng = np.random.default_rng(0)
    union = rng.integers(50, 200, size=(30, 6)).astype(float)
    inter = np.floor(union * rng.random((30, 6)))
    unseen = np.array([False, False, True, False, True, False])
    naive = []  # draw image indices, sum, IoU, nan-means, harmonic mean
    for _ in range(3000):
        idx = rng.integers(0, 30, size=30)
        iou = inter[idx].sum(0) / union[idx].sum(0)
        s, u = iou[~unseen].mean() * 100, iou[unseen].mean() * 100
        naive.append(2 * s * u / (s + u))
    out = bootstrap_gzsl(inter, union, unseen, resamples=3000)
    assert out['hIoU_boot_sd'] == pytest.approx(np.std(naive, ddof=1), rel=0.1)
    # the same counts and seed give the same answer; the global numpy and
    # torch streams are not drawn from
    state = np.random.get_state()[1].copy(), torch.get_rng_state()
    assert bootstrap_gzsl(inter, union, unseen, 3000) == out
    assert (np.random.get_state()[1] == state[0]).all()
    assert torch.equal(torch.get_rng_state(), state[1])


def test_identical_images_have_no_spread():
    inter = np.tile([[3, 4, 1]], (8, 1))
    union = np.tile([[5, 6, 2]], (8, 1))
    out = bootstrap_gzsl(inter, union, np.array([False, True, False]), 100)
    assert out == {
        'mIoU_seen_boot_sd': 0.0,
        'mIoU_unseen_boot_sd': 0.0,
        'hIoU_boot_sd': 0.0
    }


def test_metric_reports_the_spread():
    metric = GZSLIoUMetric(bootstrap=500)
    metric.dataset_meta = dict(classes=('a', 'b', 'c'), unseen_classes=('c', ))
    rng = np.random.default_rng(3)
    for _ in range(6):
        label = rng.integers(0, 3, size=(9, 9))
        pred = np.where(rng.random((9, 9)) < 0.7, label, 0)
        metric.process({}, [
            dict(
                pred_sem_seg=dict(data=torch.from_numpy(pred)[None]),
                gt_sem_seg=dict(data=torch.from_numpy(label)[None]))
        ])
    inter = np.stack([r[0].numpy() for r in metric.results])
    union = np.stack([r[1].numpy() for r in metric.results])
    out = metric.compute_metrics(metric.results)
    assert out['hIoU_boot_sd'] == bootstrap_gzsl(
        inter, union, np.array([False, False, True]), 500)['hIoU_boot_sd']
    assert out['hIoU_boot_sd'] > 0
    plain = GZSLIoUMetric()
    plain.dataset_meta = metric.dataset_meta
    plain_out = plain.compute_metrics(metric.results)
    assert 'hIoU_boot_sd' not in plain_out
    assert plain_out['hIoU'] == out['hIoU']  # the score itself unchanged


@pytest.mark.parametrize('bad', [1, -5, 2.5, True])
def test_bootstrap_is_a_count(bad):
    with pytest.raises(ValueError, match='resamples'):
        GZSLIoUMetric(bootstrap=bad)
