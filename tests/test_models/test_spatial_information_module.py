"""SpatialInformationModule: shapes and gradients of every architecture,
the latent path (F_x depends on z in training, z = mu in eval), and
CaGNet's variant without positional encoding."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmseg.registry import MODELS

from mmseg_sign.models.necks.sim_encoders import SelfAttentionEncoder

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@pytest.mark.parametrize(
    'arch',
    ['conv', 'attention', 'self_attention', 'multihead_self_attention'])
@pytest.mark.parametrize('pe_type', ['relative', 'none'])
def test_sim_shapes_and_gradients(arch, pe_type):
    sim = MODELS.build(
        dict(
            type='SIM',
            in_channels=6,
            channels=8,
            pe_type=pe_type,
            pe_channels=8,
            arch=arch,
            num_heads=2,
            latent_channels=8,
            latent_hidden=4,
            dilations=(1, 2)))
    for h, w in [(1, 1), (5, 7), (8, 8)]:
        x = torch.randn(2, 6, h, w, requires_grad=True)
        feats, mu, logvar, z = sim((torch.randn(2, 3, h, w), x))
        assert feats.shape == mu.shape == logvar.shape == z.shape == (2, 8, h,
                                                                      w)
        assert ((feats > 0) & (feats < 1)).all()  # sigmoid range, as G's
        assert (logvar >= 0).all()  # ReLU, as the authors' code
        (feats.sum() + mu.sum() + logvar.sum()).backward()
        assert x.grad is not None and x.grad.abs().sum() > 0
    for name, p in sim.named_parameters():
        assert p.grad is not None, name


def test_sim_registry_aliases_and_errors():
    from mmseg_sign.models import SpatialInformationModule
    assert MODELS.get('SIM') is SpatialInformationModule
    assert MODELS.get('SpatialInformationModule') is SpatialInformationModule
    with pytest.raises(ValueError, match='arch must be one of'):
        SpatialInformationModule(8, 8, arch='lstm', input_proj=None)
    with pytest.raises(ValueError, match='train_size'):
        SpatialInformationModule(8, 8, pe_type='absolute_interp')
    with pytest.raises(ValueError, match='in_channels == channels'):
        SpatialInformationModule(6, 8, input_proj=None)
    with pytest.raises(ValueError, match='latent_channels .4. must equal'):
        SpatialInformationModule(8, 8, input_proj=None, latent_channels=4)


def toy_sim(**kwargs):
    """The toy config's SIM (64 channels from a 128-channel backbone)."""
    import os.path as osp

    from mmengine.config import Config
    repo = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    cfg = Config.fromfile(osp.join(repo, 'configs/sign/sign_toy.py'))
    cfg.model.neck.update(kwargs)
    return MODELS.build(cfg.model.neck)


def test_features_depend_on_the_latent_code_in_training():
    """The released feature path: F_x = sigmoid(h' + h'·sigmoid(z)), so the
    segmentation loss reaches mu and logvar (not only the KL term)."""
    torch.manual_seed(0)
    sim = toy_sim().train()
    x = [torch.randn(2, 128, 6, 6)]
    feats, mu, logvar, z = sim(x)
    d_mu, d_logvar = torch.autograd.grad(feats.sum(), [mu, logvar])
    assert d_mu.abs().sum() > 0 and d_logvar.abs().sum() > 0
    # and through them the reparameterisation module's weights
    grads = torch.autograd.grad(
        sim(x)[0].sum(), [sim.reparam.mu.weight, sim.reparam.logvar.weight])
    assert all(g.abs().sum() > 0 for g in grads)
    # the formula, recomputed from the module's parts
    torch.manual_seed(1)
    feats, mu, logvar, z = sim(x)
    torch.manual_seed(1)
    h = sim.input_proj.project(x[0])
    enc_in = torch.cat([torch.sigmoid(h), sim.positional_encoding(h)], 1)
    h = h + sim.encoder(enc_in)
    mu2, logvar2 = sim.reparam(torch.sigmoid(h))
    eps = torch.randn_like(mu2)
    torch.testing.assert_close(z, mu2 + eps * torch.exp(0.5 * logvar2))
    torch.testing.assert_close(feats, torch.sigmoid(h + h * torch.sigmoid(z)))


def test_eval_is_deterministic_with_z_equal_mu():
    sim = toy_sim().eval()
    x = [torch.randn(1, 128, 5, 7)]
    a, b = sim(x), sim(x)
    for t, u in zip(a, b):
        assert torch.equal(t, u)
    feats, mu, _, z = a
    assert torch.equal(z, mu)


def test_z_modulation_off_is_the_collapsed_latent():
    """The ablation switch: F_x no longer depends on mu / logvar (their
    only gradient would be the KL term's)."""
    sim = toy_sim(z_modulation=False).train()
    feats, mu, logvar, _ = sim([torch.randn(2, 128, 4, 4)])
    d_mu, d_logvar = torch.autograd.grad(
        feats.sum(), [mu, logvar], allow_unused=True, materialize_grads=True)
    assert d_mu.abs().sum() == 0 and d_logvar.abs().sum() == 0


def test_sim_rpe_handles_unseen_test_sizes_and_interp():
    sim = MODELS.build(
        dict(
            type='SIM',
            in_channels=8,
            channels=8,
            input_proj=None,
            pe_type='absolute_interp',
            train_size=(4, 4),
            pe_channels=8,
            arch='multihead_self_attention',
            num_heads=2,
            latent_channels=8)).eval()
    out = sim([torch.randn(1, 8, 9, 13)])
    assert out[0].shape == (1, 8, 9, 13)


def test_self_attention_matches_explicit_softmax_attention():
    """SDPA path against softmax(q kᵀ / sqrt(d)) v written out."""
    from mmseg_sign.models.necks.sim_encoders import SelfAttentionEncoder
    torch.manual_seed(0)
    enc = SelfAttentionEncoder(6, 8, num_heads=2).eval()
    x = torch.randn(2, 6, 3, 5)
    h = enc.in_proj(x)
    q, k, v = enc.attention_inputs(enc.norm1(h))
    assert all(t.is_contiguous() for t in (q, k, v))  # flash-eligible
    attn = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1]**0.5, -1) @ v
    attn = attn.transpose(-1, -2).reshape(2, 8, 3, 5)
    h = h + enc.out_proj(attn)
    want = h + enc.ffn(enc.norm2(h))
    torch.testing.assert_close(enc(x), want, rtol=1e-5, atol=1e-5)


def test_key_pooled_attention_matches_explicit_pooled_softmax():
    """encoder_cfg.key_pool=2 (large inputs, docs/benchmark.md): keys and
    values are those of the 2×2 means of the normalised map (partial
    windows at the border: the mean of what is inside), queries every
    position; against the attention written out."""
    from mmseg_sign.models.necks.sim_encoders import SelfAttentionEncoder
    torch.manual_seed(0)
    enc = SelfAttentionEncoder(6, 8, num_heads=2, key_pool=2).double()
    x = torch.randn(2, 6, 3, 5, dtype=torch.float64)
    h = enc.in_proj(x)
    n = enc.norm1(h)
    pooled = torch.stack([
        torch.stack(
            [n[:, :, i:i + 2, j:j + 2].mean((2, 3))
             for j in range(0, 5, 2)], -1) for i in range(0, 3, 2)
    ], -2)  # [2, 8, 2, 3]
    qkv_w, qkv_b = enc.qkv.weight[:, :, 0, 0], enc.qkv.bias

    def heads(t):  # [B, 8, L] -> [B, 2, L, 4]
        return t.reshape(2, 2, 4, -1).transpose(-1, -2)

    q = heads(
        torch.einsum('oc,bcl->bol', qkv_w[:8], n.flatten(2)) + qkv_b[:8, None])
    k = heads(
        torch.einsum('oc,bcl->bol', qkv_w[8:16], pooled.flatten(2)) +
        qkv_b[8:16, None])
    v = heads(
        torch.einsum('oc,bcl->bol', qkv_w[16:], pooled.flatten(2)) +
        qkv_b[16:, None])
    attn = torch.softmax(q @ k.transpose(-1, -2) / 2, -1) @ v  # d = 4
    h2 = h + enc.out_proj(attn.transpose(-1, -2).reshape(2, 8, 3, 5))
    want = h2 + enc.ffn(enc.norm2(h2))
    torch.testing.assert_close(enc(x), want, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match='key_pool must be an integer'):
        SelfAttentionEncoder(6, 8, key_pool=0)


def test_head_padding_of_the_gpu_path_changes_nothing():
    """The zero-padding of q, k, v to a head size divisible by 8 (taken
    on a GPU for the paper's 600 / 8 = 75) gives the unpadded output and
    gradients, checked here on the CPU in float64 (docs/gpu.md)."""
    from mmseg_sign.models.necks.sim_encoders import SelfAttentionEncoder
    torch.manual_seed(0)
    enc = SelfAttentionEncoder(6, 12, num_heads=2).double()  # head size 6
    x = torch.randn(2, 6, 3, 5, dtype=torch.float64)
    outs, grads = [], []
    for pad in (False, True):
        enc.pad_heads = pad
        enc.zero_grad()
        out = enc(x)
        out.pow(2).sum().backward()
        outs.append(out)
        grads.append([p.grad.clone() for p in enc.parameters()])
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-12, atol=1e-12)
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_multi_level_input_and_argument_errors():
    """in_index list + 'resize_concat' fuses backbone levels (as mmseg's
    heads); unknown arguments and bad indices are clear errors."""
    sim = MODELS.build(
        dict(
            type='SIM',
            in_channels=[4, 6],
            in_index=[0, 2],
            input_transform='resize_concat',
            channels=8,
            pe_channels=8,
            num_heads=2,
            latent_channels=8,
            latent_hidden=4,
            dilations=(1, 2)))
    levels = [
        torch.randn(1, 4, 8, 8),
        torch.randn(1, 5, 4, 4),
        torch.randn(1, 6, 4, 4)
    ]
    fused = sim._select_inputs(levels)
    assert fused.shape == (1, 10, 8, 8)
    torch.testing.assert_close(fused[:, :4], levels[0])
    torch.testing.assert_close(
        fused[:, 4:],
        torch.nn.functional.interpolate(
            levels[2], size=(8, 8), mode='bilinear', align_corners=False))
    assert sim(levels)[0].shape == (1, 8, 8, 8)
    with pytest.raises(TypeError, match='input_transfrom'):
        MODELS.build(
            dict(
                type='SIM',
                in_channels=8,
                channels=8,
                input_transfrom='resize_concat'))
    with pytest.raises(ValueError, match='several .a list. with'):
        MODELS.build(
            dict(type='SIM', in_channels=8, channels=8, in_index=[0, 1]))
    single = MODELS.build(
        dict(
            type='SIM',
            in_channels=6,
            channels=8,
            in_index=3,
            pe_channels=8,
            num_heads=2,
            latent_channels=8,
            latent_hidden=4,
            dilations=(1, 2)))
    with pytest.raises(
            IndexError,
            match=r'in_index=3, but the backbone '
            r'gives 3 output\(s\)'):
        single(levels)


def test_released_gates_are_relu_sigmoid_without_bias():
    """released_gates=True: the context gates are sigmoid(ReLU(conv)) with
    a bias-free conv (as released), checked against the gated maps
    computed by hand from the module's own layers."""
    from mmseg_sign.models.necks.reparameterization import \
        ContextualReparameterization
    torch.manual_seed(0)
    module = ContextualReparameterization(6, 6, hidden=4, released_gates=True)
    assert module.gates.bias is None
    x = torch.randn(1, 6, 5, 5)
    maps, h = [], x
    for context in module.contexts:
        h = context(h)
        maps.append(h)
    gates = torch.sigmoid(
        torch.relu(
            torch.nn.functional.conv2d(
                torch.cat(maps, 1), module.gates.weight, padding=1)))
    assert (gates >= 0.5).all()
    fused = module.fuse(
        torch.cat([m * gates[:, i:i + 1] for i, m in enumerate(maps)], 1))
    mu, logvar = module(x)
    torch.testing.assert_close(mu, module.mu(fused))
    torch.testing.assert_close(logvar, torch.relu(module.logvar(fused)))
    assert ContextualReparameterization(6, 6, hidden=4).gates.bias \
        is not None


def sim_latent(neck, x):
    neck.eval()
    with torch.no_grad():
        return neck([x])[1]


def test_cagnet_latent_has_no_positional_encoding():
    """CaGNet's latent depends on the image only: a uniform feature map gives
    a uniform latent away from the borders (zero padding), while SIGN's
    RPE makes it vary from position to position."""
    cagnet = Config.fromfile(
        osp.join(REPO, 'configs', 'baselines', 'cagnet_toy.py')).model.neck
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


@pytest.mark.parametrize(
    'arch, encoder_cfg, message',
    [
        # a misspelled option of the variant
        ('multihead_self_attention', dict(ffn_ratoi=4.0),
         r"unknown keys \['ffn_ratoi'\] for arch='multihead_self_attention'; "
         r"its options: \['ffn_ratio', 'dropout', 'pad_heads', 'key_pool'\]"),
        # an option of another variant
        ('attention', dict(dropout=0.1),
         r"unknown keys \['dropout'\] for arch='attention'; its options: "
         r"\['dilations'\]"),
        ('multihead_self_attention', dict(num_heads=2),
         r"the heads are the SIM's own num_heads"),
        # nothing to pool without attention
        ('conv', dict(key_pool=2), r"arch='conv' has no attention"),
        ('attention', dict(key_pool=2), r"arch='attention' has no attention"),
    ])
def test_a_setting_the_encoder_would_not_use_is_an_error(
        arch, encoder_cfg, message):
    """The encoders took ``**kwargs`` and dropped what they did
    not know (a misspelled ``encoder_cfg`` key, ``key_pool`` on the conv
    and attention variants) without a word."""
    with pytest.raises(ValueError, match=message):
        MODELS.build(
            dict(
                type='SIM',
                in_channels=6,
                channels=8,
                arch=arch,
                num_heads=2,
                latent_channels=8,
                latent_hidden=4,
                dilations=(1, 2),
                encoder_cfg=encoder_cfg))
    # the same variant with a setting it has builds
    good = dict(
        conv={},
        attention=dict(dilations=(1, 2)),
        multihead_self_attention=dict(ffn_ratio=4.0, key_pool=2))
    sim = MODELS.build(
        dict(
            type='SIM',
            in_channels=6,
            channels=8,
            arch=arch,
            num_heads=2,
            latent_channels=8,
            latent_hidden=4,
            dilations=(1, 2),
            encoder_cfg=good[arch]))
    if arch == 'multihead_self_attention':
        assert (sim.encoder.num_heads, sim.encoder.key_pool) == (2, 2)


def test_key_pool_that_leaves_one_key_is_an_error():
    """key_pool as large as the map pooled it to one key
    (attention over one key: the same context everywhere), silently."""
    enc = SelfAttentionEncoder(6, 8, num_heads=2, key_pool=8)
    with pytest.raises(
            ValueError,
            match=r'key_pool=8 pools the 6x8 feature '
            r'map to a single key.*key_pool < 8'):
        enc(torch.randn(1, 6, 6, 8))
    assert enc(torch.randn(1, 6, 9, 12)).shape == (1, 8, 9, 12)  # 2x2 keys
