"""SPNetHead (Xian et al., CVPR 2019; Table 1's first baseline) against
hand-computed cases: the projection's logits are its features dotted with
the fixed class embeddings, it trains on the seen classes and calibrates
at test time."""
import math

import numpy as np
import pytest
import torch
from mmengine.structures import PixelData
from mmseg.registry import MODELS
from mmseg.structures import SegDataSample


def spnet_head(embedding_table, **kwargs):
    path, _ = embedding_table
    head = MODELS.build(
        dict(
            type='SPNetHead',
            in_channels=2,
            num_classes=5,
            dilations=(1, ),
            class_embeddings=path,
            unseen_classes=['c3', 'c4'],
            **kwargs))
    # P: one branch of dilation 1 (mmseg's ASPPModule makes it a 1×1
    # conv): a per-pixel linear map 2 → 12 (hand-checkable)
    conv = head.projection[0].conv
    assert conv.kernel_size == (1, 1)
    with torch.no_grad():
        conv.weight[:, :, 0, 0] = torch.arange(24.).reshape(12, 2) / 24
        conv.bias.copy_(torch.linspace(-1, 1, 12))
    return head


def test_spnet_logits_are_the_projection_dot_the_embeddings(embedding_table):
    head = spnet_head(embedding_table)
    x = torch.tensor([[[[1., -2.], [0.5, 3.]], [[2., 0.], [-1., 1.]]]])
    logits = head.forward([x])
    table = np.load(embedding_table[0])['embeddings']
    w = np.arange(24.).reshape(12, 2) / 24
    b = np.linspace(-1, 1, 12)
    for i in range(2):
        for j in range(2):
            feature = w @ x[0, :, i, j].numpy() + b  # P(x) at the pixel
            for k in range(5):
                assert logits[0, k, i, j].item() == pytest.approx(
                    float(feature @ table[k]), abs=1e-5)
    # no weights of its own for the classes: C is the table
    assert not hasattr(head, 'conv_seg')
    assert {n.split('.')[0]
            for n, _ in head.named_parameters()} == {'projection'}


def test_spnet_trains_on_the_seen_classes_and_calibrates_at_test(
        embedding_table):
    head = spnet_head(embedding_table)
    logits = torch.tensor([0.5, -1.0, 2.0, 3.0, 1.5]).view(1, 5, 1, 1)
    logits = logits.expand(1, 5, 2, 2).contiguous()
    sample = SegDataSample(
        gt_sem_seg=PixelData(data=torch.tensor([[[0, 1], [2, 255]]])))
    loss = head.loss_by_feat(logits, [sample])['loss_ce']
    # softmax over the 3 seen classes only, mean over the 3 labelled pixels
    seen = [0.5, -1.0, 2.0]
    log_z = math.log(sum(math.exp(v) for v in seen))
    expected = sum(log_z - seen[y] for y in (0, 1, 2)) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    # test time: every class; calibrated stacking lowers the seen ones by γ
    head.calibration = 2.0
    calibrated = head.calibrate(logits)[0, :, 0, 0].tolist()
    assert calibrated == pytest.approx([-1.5, -3.0, 0.0, 3.0, 1.5])
