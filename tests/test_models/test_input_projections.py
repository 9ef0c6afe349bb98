"""E's input projection over several backbone levels (MLPFusion) in the SIM,
NoisePriorNeck and SPNetHead, against plain computations with the modules'
own weights."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from mmseg.registry import MODELS

from mmseg_sign.embeddings import save_class_embeddings
from mmseg_sign.models.necks import MLPFusion, takes_levels

IN_CHANNELS = [40, 112, 320]
FUSION = dict(type='MLPFusion', mlp_channels=16)


def levels(batch=2, size=(12, 16), seed=0):
    """Three levels at strides 8 / 16 / 32 of a ``size * 8`` image."""
    g = torch.Generator().manual_seed(seed)
    h, w = size
    return [
        torch.randn(batch, c, -(-h // s), -(-w // s), generator=g)
        for c, s in zip(IN_CHANNELS, (1, 2, 4))
    ]


def randomise_norms(module, seed=1):
    """BN statistics and affine parameters away from 0 / 1, so that a
    plain computation that skipped them would differ."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g))
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + .5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + .5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=g))


def plain_fusion(fusion, xs):
    """SegFormer's per-level 1×1 conv + BN + ReLU, bilinear resize to the
    first level, concatenation, a plain 1×1 conv: by hand."""
    outs = []
    for module, x in zip(fusion.convs, xs):
        conv, bn = module.conv, module.bn
        y = F.conv2d(x, conv.weight, conv.bias)
        y = (y - bn.running_mean[:, None, None]
             ) / torch.sqrt(bn.running_var[:, None, None] + bn.eps)
        y = F.relu(y * bn.weight[:, None, None] + bn.bias[:, None, None])
        outs.append(
            F.interpolate(
                y, size=xs[0].shape[2:], mode='bilinear', align_corners=False))
    fuse = fusion.fusion_conv.conv
    return F.conv2d(torch.cat(outs, 1), fuse.weight, fuse.bias)


@torch.no_grad()
def test_mlp_fusion_is_segformers_fusion_with_a_linear_output():
    fusion = MLPFusion(IN_CHANNELS, channels=24, mlp_channels=16)
    randomise_norms(fusion)
    fusion.eval()
    xs = levels()
    got = fusion.project(xs)
    assert got.shape == (2, 24, 12, 16)
    torch.testing.assert_close(got, plain_fusion(fusion, xs))
    # as a neck of its own (the benchmark's baseline): levels by in_index
    neck = MLPFusion(
        IN_CHANNELS[1:], channels=24, mlp_channels=16, in_index=[1, 2]).eval()
    assert neck(xs)[0].shape == (2, 24, 6, 8)
    # linear output: negative values (a ReLU at the end would give none)
    assert (got < 0).any()


@torch.no_grad()
def test_segformer_heads_fusion_weights_load_by_name():
    """A trained ``SegformerHead`` (the supervised ceiling's decoder) gives
    its per-level projections and its fusion convolution to MLPFusion by
    parameter name: every per-level tensor, and the fusion weight; only the
    head's classifier and the fusion's BN (MLPFusion's output is linear)
    are left over, and only the fusion conv's bias is missing."""
    from mmseg.models.decode_heads import SegformerHead
    head = SegformerHead(
        in_channels=IN_CHANNELS,
        in_index=[0, 1, 2],
        channels=16,
        num_classes=5,
        norm_cfg=dict(type='BN', requires_grad=True))  # the ceiling's
    randomise_norms(head)
    fusion = MLPFusion(IN_CHANNELS, channels=16, mlp_channels=16)
    result = fusion.load_state_dict(head.state_dict(), strict=False)
    assert result.missing_keys == ['fusion_conv.conv.bias']
    assert sorted({k.split('.')[0]
                   for k in result.unexpected_keys
                   }) == ['conv_seg', 'fusion_conv']
    assert all(
        k.startswith(('conv_seg.', 'fusion_conv.bn.'))
        for k in result.unexpected_keys)
    for key, value in head.state_dict().items():
        if key in fusion.state_dict():
            assert torch.equal(fusion.state_dict()[key], value), key
    assert fusion.fusion_conv.conv.weight.shape == \
        head.fusion_conv.conv.weight.shape


def test_mlp_fusion_refuses_one_level_and_a_wrong_count():
    with pytest.raises(ValueError, match='in_channels must be a list'):
        MLPFusion(40, channels=8)
    with pytest.raises(ValueError, match='mlp_channels=0: the width'):
        MLPFusion(IN_CHANNELS, channels=8, mlp_channels=0)
    with pytest.raises(ValueError, match='built for 3 levels, got 2'):
        MLPFusion(IN_CHANNELS, channels=8).project(levels()[:2])
    assert takes_levels(FUSION) and takes_levels(MLPFusion([4], 4))
    assert not takes_levels('aspp') and not takes_levels(None)


def sim_cfg(**kwargs):
    return dict(
        type='SIM',
        channels=16,
        pe_channels=16,
        num_heads=2,
        latent_channels=16,
        latent_hidden=8,
        **kwargs)


@torch.no_grad()
def test_sim_reads_the_levels_through_the_fusion():
    """SIM(levels) with MLPFusion = a SIM without projection (same weights)
    applied to the fusion's output: the levels reach eq. 1 only through E's
    projection."""
    sim = MODELS.build(
        sim_cfg(
            in_channels=IN_CHANNELS, in_index=[0, 1, 2], input_proj=FUSION))
    plain = MODELS.build(sim_cfg(in_channels=16, input_proj=None))
    state = {
        k: v
        for k, v in sim.state_dict().items() if not k.startswith('input_proj.')
    }
    assert plain.load_state_dict(state, strict=True)
    randomise_norms(sim)
    sim.eval(), plain.eval()
    xs = levels()
    got = sim(xs)
    want = plain(sim.input_proj.project(xs))
    assert got[0].shape == (2, 16, 12, 16)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    # the backbone's levels in another order are not E's input
    assert not torch.allclose(sim([xs[0], xs[1], xs[2] * 2])[0], got[0])


@torch.no_grad()
def test_noise_prior_neck_reads_the_levels_through_the_fusion():
    neck = MODELS.build(
        dict(
            type='NoisePriorNeck',
            in_channels=IN_CHANNELS,
            in_index=[0, 1, 2],
            channels=16,
            input_proj=FUSION)).eval()
    xs = levels()
    feats, mu, logvar, z = neck(xs)
    torch.testing.assert_close(feats,
                               torch.sigmoid(neck.input_proj.project(xs)))
    assert not mu.any() and not logvar.any() and not z.any()


@torch.no_grad()
def test_spnet_head_projects_the_fused_levels_onto_the_embeddings(tmp_path):
    names = [f'c{i}' for i in range(5)]
    table = np.random.default_rng(0).normal(size=(5, 12)).astype(np.float32)
    path = str(tmp_path / 't.npz')
    save_class_embeddings(path, names, table)
    head = MODELS.build(
        dict(
            type='SPNetHead',
            in_channels=IN_CHANNELS,
            in_index=[0, 1, 2],
            input_transform='multiple_select',
            input_proj=FUSION,
            num_classes=5,
            class_embeddings=path,
            unseen_classes=['c4']))
    head.init_weights()
    # the fusion's BN layers keep their weights at 1 (no N(0, 0.01) on them)
    bns = [
        m for m in head.projection.modules()
        if isinstance(m, torch.nn.BatchNorm2d)
    ]
    assert bns and all(torch.all(m.weight == 1) for m in bns)
    head.eval()
    xs = levels()
    got = head(xs)
    projected = head.projection.project(xs)
    want = torch.einsum('bchw,kc->bkhw', projected, head.class_embedding)
    torch.testing.assert_close(got, want)
    # M is the table, normalised or not, row by row
    np.testing.assert_allclose(
        head.class_embedding.numpy() /
        np.linalg.norm(head.class_embedding.numpy(), axis=1, keepdims=True),
        table / np.linalg.norm(table, axis=1, keepdims=True),
        rtol=1e-5)


@pytest.mark.parametrize('cfg,match', [
    (sim_cfg(in_channels=IN_CHANNELS, in_index=2, input_proj=FUSION),
     'in_index and in_channels as lists of one length'),
    (sim_cfg(in_channels=IN_CHANNELS, in_index=[0, 1], input_proj=FUSION),
     'in_index and in_channels as lists of one length'),
    (sim_cfg(
        in_channels=IN_CHANNELS,
        in_index=[0, 1, 2],
        input_proj=FUSION,
        input_transform='resize_concat'), 'leave input_transform=None'),
    (sim_cfg(in_channels=40, in_index=0, input_proj='mlp'),
     "input_proj must be 'aspp', None or a projection's config"),
    (dict(
        type='NoisePriorNeck',
        in_channels=IN_CHANNELS,
        in_index=[0, 1, 2],
        channels=16,
        input_proj='aspp'), 'reads one backbone level'),
    (dict(type='NoisePriorNeck', in_channels=40, channels=16,
          input_proj=None), 'needs an input projection'),
])
def test_bad_projection_settings_fail_at_build(cfg, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(cfg)


def test_spnet_head_needs_multiple_select_for_levels(tmp_path):
    path = str(tmp_path / 't.npz')
    save_class_embeddings(path, ['a', 'b'], np.eye(2, 4, dtype=np.float32))
    with pytest.raises(ValueError, match="input_transform='multiple_select'"):
        MODELS.build(
            dict(
                type='SPNetHead',
                in_channels=IN_CHANNELS,
                in_index=[0, 1, 2],
                input_transform='resize_concat',
                input_proj=FUSION,
                num_classes=2,
                class_embeddings=path))


@torch.no_grad()
def test_levels_are_read_by_one_rule(tmp_path):
    """The SIM, NoisePriorNeck and SPNetHead read the backbone by one
    function (select_levels): levels finest first, each as wide as
    in_channels says, indices in range; the projection's own in_index is
    refused at build time, and an unknown projection type names the
    registry."""
    from mmseg_sign.models.necks.input_projections import select_levels
    xs = levels()
    assert select_levels(xs, [0, 1, 2], IN_CHANNELS, 'X') == xs
    assert select_levels(xs, 1, 112, 'X') is xs[1]
    with pytest.raises(
            ValueError,
            match=r'SIM in_index=\[2, 1, 0\] reads levels of '
            r'sizes \[\(3, 4\), \(6, 8\), \(12, 16\)\]: give '
            r'them finest first .* e\.g\. in_index=\[0, 1, 2\]'):
        select_levels(xs, [2, 1, 0], IN_CHANNELS[::-1], 'SIM')
    with pytest.raises(
            ValueError,
            match=r'in_channels=\[40, 112, 300\], but the '
            r'backbone outputs \[0, 1, 2\] have \[40, 112, 320\] '
            r'channels: set in_channels=\[40, 112, 320\]'):
        select_levels(xs, [0, 1, 2], [40, 112, 300], 'SIM')
    with pytest.raises(IndexError, match=r'gives 3 output\(s\)'):
        select_levels(xs, [0, 1, 3], IN_CHANNELS + [8], 'SIM')
    # the same rule inside the modules, at their first forward
    sim = MODELS.build(
        sim_cfg(
            in_channels=IN_CHANNELS[::-1],
            in_index=[2, 1, 0],
            input_proj=FUSION))
    with pytest.raises(ValueError, match='give them finest first'):
        sim(xs)
    neck = MODELS.build(
        dict(
            type='NoisePriorNeck',
            in_channels=[40, 112, 300],
            in_index=[0, 1, 2],
            channels=16,
            input_proj=FUSION))
    with pytest.raises(ValueError, match='NoisePriorNeck in_channels='):
        neck(xs)
    # options of the owner's given to the projection; a misspelt type
    with pytest.raises(
            ValueError,
            match=r'in_index belong to SIM itself.* set SIM.s '
            r'own in_index'):
        MODELS.build(
            sim_cfg(
                in_channels=IN_CHANNELS,
                in_index=[0, 1, 2],
                input_proj=dict(FUSION, in_index=[2, 1, 0])))
    with pytest.raises(
            KeyError,
            match=r"input_proj type 'MLPFusoin' is not in the "
            r'mmseg::model registry'):
        MODELS.build(
            sim_cfg(
                in_channels=IN_CHANNELS,
                in_index=[0, 1, 2],
                input_proj=dict(type='MLPFusoin')))
    with pytest.raises(ValueError, match='distinct backbone outputs'):
        MODELS.build(
            sim_cfg(
                in_channels=IN_CHANNELS, in_index=[0, 0, 1],
                input_proj=FUSION))
