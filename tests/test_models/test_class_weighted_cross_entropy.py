"""ClassWeightedCrossEntropyLoss: the class-weighted mean over the pixels
that are not ignored (mmseg 1.2.2's own fails on an ignored pixel)."""
import math

import pytest
import torch
import torch.nn.functional as F
from mmseg.models.losses import CrossEntropyLoss

from mmseg_sign.models.losses import ClassWeightedCrossEntropyLoss


def test_hand_worked_example():
    """Two classes with weights 1 and 3; three pixels: class 0 with
    p = 0.5, class 1 with p = 0.5, and an ignored one. Weighted mean of
    -log 0.5 with weights 1 and 3: (1 + 3) · log 2 / (1 + 3) = log 2."""
    loss = ClassWeightedCrossEntropyLoss(class_weight=[1.0, 3.0])
    logits = torch.zeros(1, 2, 1, 3)
    label = torch.tensor([[[0, 1, 255]]])
    got = loss(logits, label, ignore_index=255)
    assert math.isclose(got.item(), math.log(2), rel_tol=1e-6)
    # unequal losses: pixel 0 has p(0) = e/(1+e), pixel 1 p(1) = 1/(1+e)
    logits[0, 0] = 1.0
    got = loss(logits, label, ignore_index=255)
    want = (1 * -math.log(math.e /
                          (1 + math.e)) + 3 * -math.log(1 / (1 + math.e))) / 4
    assert math.isclose(got.item(), want, rel_tol=1e-6)


def test_is_pytorchs_weighted_cross_entropy():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 7, 9, generator=g, requires_grad=True)
    label = torch.randint(0, 5, (2, 7, 9), generator=g)
    label[:, :2] = 255  # ignored rows
    weights = [0.3, 1.0, 2.5, 0.7, 4.0]
    loss = ClassWeightedCrossEntropyLoss(class_weight=weights, loss_weight=2.0)
    got = loss(logits, label, ignore_index=255)
    want = 2.0 * F.cross_entropy(
        logits, label, weight=torch.tensor(weights), ignore_index=255)
    torch.testing.assert_close(got, want)
    grad, = torch.autograd.grad(got, logits)
    want_grad, = torch.autograd.grad(want, logits)
    torch.testing.assert_close(grad, want_grad)


def test_mmsegs_own_fails_where_this_one_works():
    """The bug this class exists for (open-mmlab/mmsegmentation#3734)."""
    logits = torch.zeros(1, 2, 1, 3)
    label = torch.tensor([[[0, 1, 255]]])
    with pytest.raises(IndexError):
        CrossEntropyLoss(class_weight=[1.0, 3.0])(
            logits, label, ignore_index=255)


def test_refuses_what_it_does_not_do():
    with pytest.raises(ValueError, match='needs class_weight'):
        ClassWeightedCrossEntropyLoss()
    with pytest.raises(ValueError, match='softmax'):
        ClassWeightedCrossEntropyLoss(use_sigmoid=True, class_weight=[1.])
