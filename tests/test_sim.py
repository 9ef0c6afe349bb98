"""SpatialInformationModule: shapes and gradients of every architecture."""
import pytest
import torch

from mmseg.registry import MODELS


@pytest.mark.parametrize('arch', [
    'conv', 'attention', 'self_attention', 'multihead_self_attention'
])
@pytest.mark.parametrize('pe_type', ['relative', 'none'])
def test_sim_shapes_and_gradients(arch, pe_type):
    sim = MODELS.build(
        dict(type='SIM', in_channels=6, channels=8, pe_type=pe_type,
             pe_channels=8, arch=arch, num_heads=2, latent_channels=4,
             dilations=(1, 2)))
    for h, w in [(1, 1), (5, 7), (8, 8)]:
        x = torch.randn(2, 6, h, w, requires_grad=True)
        feats, mu, logvar = sim((torch.randn(2, 3, h, w), x))
        assert feats.shape == (2, 8, h, w)
        assert mu.shape == logvar.shape == (2, 4, h, w)
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


def test_sim_rpe_handles_unseen_test_sizes_and_interp():
    sim = MODELS.build(
        dict(type='SIM', in_channels=8, channels=8, input_proj=None,
             pe_type='absolute_interp', train_size=(4, 4), pe_channels=8,
             arch='multihead_self_attention', num_heads=2,
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
