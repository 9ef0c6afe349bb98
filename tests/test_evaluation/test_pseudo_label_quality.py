"""tools/analysis/pseudo_label_quality.py: grouping and summary on a
hand-made case (the tool on a trained teacher: test_tools_e2e.py)."""
import importlib.util
import os.path as osp

import pytest
import torch

spec = importlib.util.spec_from_file_location(
    'pseudo_label_quality',
    osp.join(
        osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))), 'tools',
        'analysis', 'pseudo_label_quality.py'))
plq = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plq)


def test_groups_and_summary_of_a_hand_made_image():
    # classes 0, 1 seen, 2, 3 unseen; 255 void. One row of 8 pixels:
    true = torch.tensor([[0, 1, 2, 2, 3, 255, 255, 255]])
    train = torch.tensor([[0, 1, 255, 255, 255, 255, 255, 255]])
    # pseudo labels: pixel 2 right (2), 3 wrong (3), 4 not kept (255),
    # 5 and 6 void labelled 2 and 3, 7 padding (invalid)
    target = torch.tensor([[0, 1, 2, 3, 255, 2, 3, 2]])
    valid = torch.tensor([[True] * 7 + [False]])
    weight = torch.tensor([[1, 1, 0.5, 0.25, 0, 1.0, 0.25, 0.9]])
    masks = plq.pseudo_label_groups(target, true, train, torch.tensor([2, 3]),
                                    valid)
    assert masks['unseen'].nonzero()[:, 1].tolist() == [2, 3, 4]
    assert masks['right'].nonzero()[:, 1].tolist() == [2]
    assert masks['wrong'].nonzero()[:, 1].tolist() == [3]
    assert masks['void'].nonzero()[:, 1].tolist() == [5, 6]
    counts = {k: int(m.sum()) for k, m in masks.items()}
    weights = {g: [weight[masks[g]]] for g in plq.GROUPS}
    r = plq.summarise(counts, weights)
    assert r['pseudo_pixels'] == 4
    assert r['share_on_unseen'] == pytest.approx(2 / 4)
    assert r['share_on_void'] == pytest.approx(2 / 4)
    assert r['accuracy_on_unseen'] == pytest.approx(1 / 2)
    assert r['coverage_of_unseen'] == pytest.approx(2 / 3)
    # pseudo-label weight: right 0.5, wrong 0.25, void 1.25 of 2.0
    assert r['weighted_share_right'] == pytest.approx(0.5 / 2.0)
    assert r['weighted_share_void'] == pytest.approx(1.25 / 2.0)
    assert r['weights']['void']['mean'] == pytest.approx(0.625)
    assert r['weights']['void']['q50'] == pytest.approx(0.625)
    assert r['weights']['right']['pixels'] == 1


def test_empty_groups_are_nan_not_errors():
    counts = dict(unseen=0, right=0, wrong=0, void=0)
    r = plq.summarise(counts, {g: [] for g in plq.GROUPS})
    assert r['pseudo_pixels'] == 0
    assert r['accuracy_on_unseen'] != r['accuracy_on_unseen']  # nan
    assert r['weights']['right']['pixels'] == 0
