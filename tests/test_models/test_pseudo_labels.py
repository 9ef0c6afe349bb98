"""Self-training pseudo labels on hand-made confidence maps."""
import math

import pytest
import torch

from mmseg_sign.models.utils import pseudo_label_image, top_p_mask

IGN = 255


def hand_probs():
    """4 classes (2, 3 unseen) on a 2×3 image; label: seen 0 and 1 on the
    top row, ignore elsewhere; the last column is padding."""
    probs = torch.tensor([
        [[0.7, 0.1, 0.1], [0.1, 0.1, 0.1]],  # class 0
        [[0.1, 0.7, 0.1], [0.1, 0.1, 0.1]],  # class 1
        [[0.1, 0.1, 0.5], [0.6, 0.2, 0.5]],  # class 2 (unseen)
        [[0.1, 0.1, 0.3], [0.2, 0.6, 0.3]],  # class 3 (unseen)
    ])
    label = torch.tensor([[0, 1, IGN], [IGN, IGN, IGN]])
    valid = torch.tensor([[True, True, False], [True, True, False]])
    return probs, label, valid, torch.tensor([2, 3])


def test_ast_pseudo_labels_only_on_ignored_valid_pixels():
    probs, label, valid, unseen = hand_probs()
    target, weight, conf = pseudo_label_image(
        probs, label, unseen, valid, mode='AST', temperature=2.0)
    # seen labels kept with weight 1; padding never pseudo-labelled
    assert target.tolist() == [[0, 1, IGN], [2, 3, IGN]]
    # two pseudo pixels, confidences 0.6 and 0.6 -> weights exp(0) = 1
    torch.testing.assert_close(weight,
                               torch.tensor([[1., 1., 0.], [1., 1., 0.]]))
    torch.testing.assert_close(conf, torch.tensor([0.6, 0.6]))


def test_ast_weights_by_hand():
    probs, label, valid, unseen = hand_probs()
    probs[2, 1, 0] = 0.9  # pixel (1, 0): class 2 with p = 0.9
    _, weight, _ = pseudo_label_image(
        probs, label, unseen, valid, mode='AST', temperature=0.5)
    # pixel (1, 1): class 3 with p = 0.6 -> exp((0.6 - 0.9) / 0.5)
    assert weight[1, 0].item() == pytest.approx(1.0)
    assert weight[1, 1].item() == pytest.approx(math.exp(-0.6), rel=1e-6)


def test_top_p_mask_by_hand():
    conf = torch.tensor([0.9, 0.2, 0.5, 0.4, 0.8, 0.1, 0.3])
    labels = torch.tensor([2, 2, 2, 2, 3, 3, 3])
    # class 2: 4 pixels, 50 % -> 2 kept (0.9, 0.5); class 3: 3 pixels,
    # 50 % -> ceil(1.5) = 2 kept (0.8, 0.3)
    keep = top_p_mask(conf, labels, 50)
    assert keep.tolist() == [True, False, True, False, True, False, True]
    assert top_p_mask(conf, labels, 100).all()
    with pytest.raises(ValueError, match='percentage'):
        top_p_mask(conf, labels, 0)


def five_pixels():
    """3 classes (2 unseen) on a 1×5 image: pixels 0-3 ignored, pixel 4
    labelled 0; pixels 0 and 2 are predicted unseen (0.9, 0.8), 1 and 3
    class 1 (0.6, 0.7)."""
    probs = torch.zeros(3, 1, 5)
    probs[0] = 0.1
    probs[2] = torch.tensor([0.9, 0.3, 0.8, 0.2, 0.5])
    probs[1] = 1 - probs[0] - probs[2]
    label = torch.full((1, 5), IGN)
    label[0, 4] = 0
    return probs, label


def test_st_mode_drops_unconfident_pseudo_labels():
    probs, label = five_pixels()
    target, weight, conf = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='ST', top_p=100)
    # ZS3: candidates are the ignored pixels predicted unseen (arg-max over
    # all classes): pixels 0 (0.9) and 2 (0.8); pixels 1 and 3 are
    # predicted class 1 (0.6, 0.7)
    assert target.tolist() == [[2, IGN, 2, IGN, 0]]
    assert weight.tolist() == [[1., 0., 1., 0., 1.]]
    torch.testing.assert_close(conf, torch.tensor([0.9, 0.8]))
    # top 50 % of the 2 candidates: ceil(1) = 1 (0.9)
    target, weight, conf = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='ST', top_p=50)
    assert target.tolist() == [[2, IGN, IGN, IGN, 0]]
    torch.testing.assert_close(conf, torch.tensor([0.9]))


def test_st_topk_mode_is_cagnets_rank_rule():
    """CaGNet: the best unseen class labels a pixel when it ranks among
    the pixel's top_k classes."""
    probs = torch.tensor([
        [[0.5, 0.1, 0.3]],  # class 0 (seen)
        [[0.3, 0.2, 0.6]],  # class 1 (seen)
        [[0.2, 0.7, 0.1]]
    ])  # class 2 (unseen)
    label = torch.full((1, 3), IGN)
    # ranks of class 2: pixel 0 third, pixel 1 first, pixel 2 third
    target, weight, conf = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='ST_topk', top_k=1)
    assert target.tolist() == [[IGN, 2, IGN]]
    torch.testing.assert_close(conf, torch.tensor([0.7]))
    target, _, _ = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='ST_topk', top_k=2)
    assert target.tolist() == [[IGN, 2, IGN]]
    target, weight, _ = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='ST_topk', top_k=3)
    assert target.tolist() == [[2, 2, 2]] and weight.eq(1).all()
    with pytest.raises(ValueError, match='mode must be one of'):
        pseudo_label_image(probs, label, torch.tensor([2]), mode='st')


def test_pseudo_labels_are_only_unseen_classes():
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(6, 8, 9, generator=g).softmax(0)
    label = torch.randint(0, 3, (8, 9), generator=g)
    label[torch.rand(8, 9, generator=g) < 0.5] = IGN
    unseen = torch.tensor([3, 5])
    target, weight, _ = pseudo_label_image(probs, label, unseen, mode='AST')
    pseudo = label == IGN
    assert set(target[pseudo].unique().tolist()) <= {3, 5}
    assert torch.equal(target[~pseudo], label[~pseudo])
    assert (weight[pseudo] > 0).all() and (weight[pseudo] <= 1).all()
    # every pseudo label is the most probable unseen class
    best = unseen[probs[unseen].argmax(0)]
    assert torch.equal(target[pseudo], best[pseudo])


def test_ast_on_predicted_unseen_candidates_by_hand():
    """candidates='predicted_unseen': AST labels only the ignored pixels
    whose arg-max over all classes is unseen; eq. 16 normalises over
    them."""
    probs, label = five_pixels()
    target, weight, conf = pseudo_label_image(
        probs,
        label,
        torch.tensor([2]),
        mode='AST',
        temperature=0.5,
        candidates='predicted_unseen')
    # pixels 0 (p 0.9) and 2 (p 0.8) are predicted unseen; 1, 3 class 1
    assert target.tolist() == [[2, IGN, 2, IGN, 0]]
    torch.testing.assert_close(
        weight, torch.tensor([[1.0, 0.0,
                               math.exp(-0.1 / 0.5), 0.0, 1.0]]))
    torch.testing.assert_close(conf, torch.tensor([0.9, 0.8]))
    # the paper's AST labels all four ignored pixels
    target, weight, _ = pseudo_label_image(
        probs, label, torch.tensor([2]), mode='AST', temperature=0.5)
    assert target.tolist() == [[2, 2, 2, 2, 0]]
    assert weight[0, 3].item() == pytest.approx(math.exp(-0.7 / 0.5))
    with pytest.raises(ValueError, match='candidates'):
        pseudo_label_image(
            probs, label, torch.tensor([2]), mode='AST', candidates='all')
