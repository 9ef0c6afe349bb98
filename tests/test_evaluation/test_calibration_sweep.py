"""GZSLIoUMetric(calibration_sweep=[...]): per-γ seen /
unseen / harmonic mIoU against a naive numpy reference, hIoU_best,
calibration_best and AUSUC against a hand trapezoid, memory that does not
depend on the image size, the plot tool, and an end-to-end tools/test.py
run on the toy data."""
import json
import os.path as osp
import re
import sys

import numpy as np
import pytest
import tool_server
import torch
from e2e_utils import REPO, last_metrics, run_tool, write_config

from mmseg_sign.evaluation import GZSLIoUMetric

CLASSES = ('a', 'b', 'c', 'd')
UNSEEN = ('b', 'd')  # ids 1 and 3
UNSEEN_IDS = [1, 3]
SWEEP = [-1.0, 0.0, 0.5, 1.0, 2.0, 5.0]


def hand_example():
    """Two images with known logits [K, H, W] and labels (some 255)."""
    rng = np.random.default_rng(3)
    logits, labels = [], []
    for shape in ((5, 6), (4, 7)):
        # quarter steps: no float rounding, and ties happen (argmax order)
        lg = rng.integers(-8, 9, size=(4, *shape)).astype(np.float32) / 4
        lb = rng.integers(0, 4, size=shape)
        lb[rng.random(shape) < 0.2] = 255
        logits.append(lg)
        labels.append(lb.astype(np.int64))
    return logits, labels


def naive_point(logits, labels, gamma, k=4, unseen_ids=UNSEEN_IDS):
    conf = np.zeros((k, k), dtype=np.int64)
    seen = np.array([c not in unseen_ids for c in range(k)])
    for lg, lb in zip(logits, labels):
        pred = np.argmax(lg - gamma * seen[:, None, None], axis=0)
        for p, t in zip(pred.ravel(), lb.ravel()):
            if t != 255:
                conf[t, p] += 1
    ious = []
    for c in range(k):
        tp = conf[c, c]
        union = conf[c, :].sum() + conf[:, c].sum() - tp
        ious.append(tp / union if union > 0 else np.nan)
    ious = np.array(ious)

    def nanmean(x):
        return np.nan if np.isnan(x).all() else np.nanmean(x)

    s = nanmean(ious[seen]) * 100
    u = nanmean(ious[~seen]) * 100
    h = 0.0 if s + u == 0 else 2 * s * u / (s + u)
    return s, u, h


def make_metric(**kwargs):
    metric = GZSLIoUMetric(**kwargs)
    metric.dataset_meta = dict(classes=CLASSES, unseen_classes=list(UNSEEN))
    return metric


def sample(lg, lb, pred=None):
    lg = torch.from_numpy(lg)
    if pred is None:
        pred = lg.argmax(0)
    return dict(
        seg_logits=dict(data=lg),
        pred_sem_seg=dict(data=torch.as_tensor(pred)[None]),
        gt_sem_seg=dict(data=torch.from_numpy(lb)[None]))


def run(metric, logits, labels):
    for lg, lb in zip(logits, labels):
        metric.process({}, [sample(lg, lb)])
    return metric.compute_metrics(metric.results)


def test_sweep_against_naive_reference(tmp_path):
    logits, labels = hand_example()
    metric = make_metric(
        calibration_sweep=SWEEP, calibration_dir=str(tmp_path))
    out = run(metric, logits, labels)
    with open(tmp_path / 'calibration_sweep.json') as f:
        curve = json.load(f)
    ref = [naive_point(logits, labels, g) for g in SWEEP]
    assert [p['gamma'] for p in curve['points']] == SWEEP
    for (s, u, h), p in zip(ref, curve['points']):
        np.testing.assert_allclose(
            [p['mIoU_seen'], p['mIoU_unseen'], p['hIoU']], [s, u, h],
            atol=1e-4)
    # the sweep really trades seen for unseen on this example
    assert len({round(s, 4) for s, _, _ in ref}) > 2
    hs = [h for _, _, h in ref]
    best = int(np.argmax(hs))
    assert out['hIoU_best'] == pytest.approx(round(hs[best], 2), abs=1e-9)
    assert out['calibration_best'] == SWEEP[best]
    # hand trapezoid: points sorted by seen mIoU
    pts = sorted((s, u) for s, u, _ in ref)
    area = sum((pts[i + 1][0] - pts[i][0]) * (pts[i + 1][1] + pts[i][1]) / 2
               for i in range(len(pts) - 1)) / 100
    assert out['AUSUC'] == pytest.approx(round(area, 2), abs=1e-9)
    assert curve['AUSUC'] == out['AUSUC']
    assert area > 0


def test_gamma_zero_equals_usual_keys(tmp_path):
    logits, labels = hand_example()
    metric = make_metric(
        calibration_sweep=[0.0, 1.0], calibration_dir=str(tmp_path))
    out = run(metric, logits, labels)
    with open(tmp_path / 'calibration_sweep.json') as f:
        p0 = json.load(f)['points'][0]
    for key in ('mIoU_seen', 'mIoU_unseen', 'hIoU', 'mIoU'):
        assert round(p0[key], 2) == out[key], key
    # the usual keys are those of the metric without a sweep
    plain = run(make_metric(), logits, labels)
    assert {k: out[k] for k in plain} == plain
    assert not {'hIoU_best', 'calibration_best', 'AUSUC'} & set(plain)


def test_sweep_memory_does_not_grow_with_the_test_set():
    """One running [G, 2, K] sum, whatever the number and size of the
    images; the per-image results are IoUMetric's usual four counts."""
    rng = np.random.default_rng(0)
    metric = make_metric(calibration_sweep=SWEEP)
    for shape in ((8, 8), (64, 96), (8, 8)):
        lg = rng.normal(size=(4, *shape)).astype(np.float32)
        lb = rng.integers(0, 4, size=shape)
        metric.process({}, [sample(lg, lb)])
        assert tuple(metric._sweep_sum.shape) == (len(SWEEP), 2, 4)
    assert all(len(res) == 4 for res in metric.results)
    # every scored pixel is predicted once per γ
    assert metric._sweep_sum[:, 1].sum(1).tolist() == \
        [64 * 96 + 2 * 64] * len(SWEEP)


def test_missing_seg_logits_is_a_clear_error():
    metric = make_metric(calibration_sweep=[0.0])
    s = sample(*[x[0] for x in hand_example()])
    del s['seg_logits']
    with pytest.raises(KeyError, match='needs the `seg_logits`'):
        metric.process({}, [s])


@pytest.mark.slow
def test_plot_tool_writes_png(tmp_path):
    logits, labels = hand_example()
    run(
        make_metric(calibration_sweep=SWEEP, calibration_dir=str(tmp_path)),
        logits, labels)
    png = tmp_path / 'curve.png'
    tool_server.run([
        sys.executable,
        osp.join(REPO, 'tools', 'analysis', 'plot_calibration.py'),
        str(tmp_path / 'calibration_sweep.json'), '--out',
        str(png)
    ],
                    check=True,
                    capture_output=True,
                    timeout=120)
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


@pytest.mark.slow
def test_tools_test_end_to_end(tmp_path):
    from mmengine.config import Config
    from mmseg.registry import MODELS

    from mmseg_sign.analysis.toy_data import make_toy_dataset
    data = tmp_path / 'data' / 'toy'
    make_toy_dataset(str(data), num_train=4, num_val=4, seed=0)
    cfg_path = write_config(tmp_path / 'sign.py', 'configs/sign/sign_toy.py',
                            '')
    cfg = Config.fromfile(cfg_path)
    cfg.model.decode_head.class_embeddings = str(data / 'class_embeddings.npz')
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    ckpt = str(tmp_path / 'model.pth')
    torch.save({'state_dict': model.state_dict(), 'meta': {}}, ckpt)
    work = str(tmp_path / 'wd')
    out = run_tool([
        'test.py', cfg_path, ckpt, '--work-dir', work, '--cfg-options',
        'test_evaluator.calibration_sweep=[0,0.5,1]'
    ],
                   cwd=str(tmp_path))
    assert 'calibration sweep (γ subtracted from seen-class scores' in out
    table = out[out.index('calibration sweep (γ'):]
    assert '| gamma | mIoU_seen | mIoU_unseen | hIoU |' in table
    for gamma in ('0', '0.5', '1'):
        assert re.search(rf'\|\s+{re.escape(gamma)}( \*)?\s+\|', table), gamma
    metrics = last_metrics(work)
    for key in ('mIoU_seen', 'mIoU_unseen', 'hIoU', 'hIoU_best',
                'calibration_best', 'AUSUC'):
        assert key in metrics, key
    assert metrics['calibration_best'] in (0, 0.5, 1)
    curves = list(
        (tmp_path / 'wd').glob('*/calibration/calibration_sweep.json'))
    assert len(curves) == 1
    with open(curves[0]) as f:
        assert [p['gamma'] for p in json.load(f)['points']] == [0, 0.5, 1]
