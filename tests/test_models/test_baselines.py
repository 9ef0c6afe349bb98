"""The pieces that tell Table 1's baselines apart, against hand-computed
cases: SPNet's projection logits and seen-only training, ZS3Net's noise
latent and its generator step without a discriminator, CaGNet's latent
without positional encoding."""
import math
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.structures import PixelData

from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from mmseg.structures import SegDataSample
from model_utils import batch, changed, tiny_model

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def spnet_head(embedding_table, **kwargs):
    path, _ = embedding_table
    head = MODELS.build(dict(
        type='SPNetHead', in_channels=2, num_classes=5, dilations=(1, ),
        class_embeddings=path, unseen_classes=['c3', 'c4'], **kwargs))
    # P: one branch of dilation 1 (mmseg's ASPPModule makes it a 1×1
    # conv): a per-pixel linear map 2 → 12 (hand-checkable)
    conv = head.projection[0].conv
    assert conv.kernel_size == (1, 1)
    with torch.no_grad():
        conv.weight[:, :, 0, 0] = torch.arange(24.).reshape(12, 2) / 24
        conv.bias.copy_(torch.linspace(-1, 1, 12))
    return head


def test_spnet_logits_are_the_projection_dot_the_embeddings(
        embedding_table):
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
    assert {n.split('.')[0] for n, _ in head.named_parameters()} == {
        'projection'}


def test_spnet_trains_on_the_seen_classes_and_calibrates_at_test(
        embedding_table):
    head = spnet_head(embedding_table)
    logits = torch.tensor([0.5, -1.0, 2.0, 3.0, 1.5]).view(1, 5, 1, 1)
    logits = logits.expand(1, 5, 2, 2).contiguous()
    sample = SegDataSample(gt_sem_seg=PixelData(
        data=torch.tensor([[[0, 1], [2, 255]]])))
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


def test_zs3net_latent_is_noise_independent_of_the_image():
    neck = MODELS.build(dict(type='NoisePriorNeck', in_channels=4,
                             channels=6, dilations=(1, 2)))
    a, b = torch.randn(2, 4, 5, 5), 10 * torch.randn(2, 4, 5, 5)
    torch.manual_seed(3)
    feats_a, mu, logvar, z_a = neck([a])
    torch.manual_seed(3)
    feats_b, _, _, z_b = neck([b])
    assert not torch.equal(feats_a, feats_b)
    torch.testing.assert_close(z_a, z_b)  # the same noise whatever the image
    torch.manual_seed(3)
    torch.testing.assert_close(z_a, torch.randn(2, 6, 5, 5))  # N(0, I)
    assert not mu.any() and not logvar.any()
    # F_x = sigmoid(ASPP(x)), in SIGN's feature range
    expected = torch.sigmoid(sum(branch(a) for branch in neck.input_proj))
    torch.testing.assert_close(feats_a, expected)
    neck.eval()
    assert not neck([a])[3].any()  # z = mu = 0 at test time


def test_zs3net_generator_learns_from_the_mmd_alone(embedding_table):
    path, _ = embedding_table
    model = tiny_model(path, classifier='shared_trunk')
    model.neck = MODELS.build(dict(type='NoisePriorNeck', in_channels=32,
                                   channels=8, dilations=(1, 2)))
    model.decode_head = MODELS.build(dict(
        type='SIGNHead', in_channels=8, channels=8, num_classes=5,
        class_embeddings=path, latent_channels=8, generator_hidden=(16, ),
        generator_dropout=0.0, trunk_channels=16, gen_unseen_rate=2,
        unseen_classes=['c3', 'c4'], adversarial=False))
    head = model.decode_head
    assert head.discriminator is None
    # as zs3net_toy.py: no D, so D's wrapper trains C (trunk + conv_seg)
    wrappers = OPTIM_WRAPPER_CONSTRUCTORS.build(dict(
        type='ModuleGroupOptimWrapperConstructor', optim_wrapper_cfg=dict(
            segmentor=dict(optimizer=dict(type='SGD', lr=0.1),
                           modules=['backbone', 'neck']),
            generator=dict(optimizer=dict(type='Adam', lr=1e-2),
                           modules=['decode_head.generator']),
            discriminator=dict(optimizer=dict(type='Adam', lr=1e-2),
                               modules=['decode_head.trunk',
                                        'decode_head.conv_seg']))))(model)
    model.set_stage('train')
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    log_vars = model.train_step(batch(), wrappers)
    # no adversarial term anywhere; the KL of a noise latent is 0
    assert not [k for k in log_vars if 'adv' in k]
    assert {'loss_mmd', 'loss_ce', 'loss_ce_d'} <= set(log_vars)
    assert log_vars['loss_kld'].item() == 0
    moved = changed(before, model.state_dict())
    assert any(k.startswith('decode_head.generator.') for k in moved)
    assert any(k.startswith('decode_head.conv_seg.') for k in moved)


def sim_latent(neck, x):
    neck.eval()
    with torch.no_grad():
        return neck([x])[1]


def test_cagnet_latent_has_no_positional_encoding():
    """CaGNet's latent depends on the image only: a uniform feature map gives
    a uniform latent away from the borders (zero padding), while SIGN's
    RPE makes it vary from position to position."""
    cagnet = Config.fromfile(osp.join(REPO, 'configs', 'baselines',
                                      'cagnet_toy.py')).model.neck
    sign = Config.fromfile(osp.join(REPO, 'configs', 'sign',
                                    'sign_toy.py')).model.neck
    assert (cagnet.arch, cagnet.pe_type) == ('attention', 'none')
    x = torch.full((1, 128, 64, 64), 0.3)
    torch.manual_seed(0)
    neck = MODELS.build(cagnet)
    assert neck.pe_channels == 0
    inner = sim_latent(neck, x)[0, :, 28:36, 28:36]  # 28+ px from edges
    torch.testing.assert_close(inner, inner[:, :1, :1].expand_as(inner))
    torch.manual_seed(0)
    with_pe = sim_latent(MODELS.build(sign), x)[0, :, 28:36, 28:36]
    assert (with_pe - with_pe[:, :1, :1]).abs().max() > 1e-4
