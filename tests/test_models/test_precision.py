"""Mixed precision, op by op: every op of the training path that is fragile
in half precision, run under ``torch.autocast('cpu', float16 / bfloat16)``
with its inputs in that dtype (as the half-precision layers before it give
them), against the same op in float32 on the unrounded inputs.

Tolerances (relative, on the output and on the gradient's norm): bfloat16
keeps 8 significant bits (rounding 2^-9 ≈ 0.2 %), float16 11 bits (0.05 %);
an op within ``TOL`` loses no more than a few roundings of its inputs. Ops
that lost the signal run in float32 (``float32_op``): for them a test also
shows that the same formula without the float32 region fails the tolerance.
Then hostile magnitudes: finite losses and gradients.
"""
from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F

from mmseg_sign.models.discriminators import discriminator_loss
from mmseg_sign.models.generators import class_mmd_loss
from mmseg_sign.models.losses import (adversarial_loss, annealed_weights,
                                      gaussian_mmd, kl_divergence)
from mmseg_sign.models.necks.sim_encoders import SelfAttentionEncoder

DTYPES = (torch.bfloat16, torch.float16)
#: relative tolerance per autocast dtype (output and gradient norm)
TOL = {torch.bfloat16: 3e-2, torch.float16: 5e-3}


def run(fn, inputs, dtype=None, weights=None):
    """``fn(*inputs)`` and the gradients of ``Σ weights · output`` w.r.t.
    the floating inputs; with ``dtype`` under autocast, the inputs cast to
    ``dtype`` first (the output of a half-precision layer)."""
    leaves = [
        x.detach().clone().requires_grad_(x.is_floating_point())
        for x in inputs
    ]
    ctx = torch.autocast('cpu', dtype=dtype) if dtype else nullcontext()
    with ctx:
        args = [
            x.to(dtype) if dtype and x.is_floating_point() else x
            for x in leaves
        ]
        out = fn(*args)
    out = out.float()
    w = torch.ones_like(out) if weights is None else weights
    (out * w).sum().backward()
    return out.detach(), [x.grad for x in leaves if x.is_floating_point()]


def rel_err(a, b):
    return float(
        (a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-30))


def assert_close(fn, inputs, dtype, tol=None, weights=None):
    tol = TOL[dtype] if tol is None else tol
    ref, ref_grads = run(fn, inputs, weights=weights)
    out, grads = run(fn, inputs, dtype, weights=weights)
    assert out.dtype == torch.float32
    err = rel_err(out, ref)
    assert err <= tol, f'output off by {err:.2e} (> {tol:.0e})'
    for g, g_ref in zip(grads, ref_grads):
        if g_ref is None or not bool(g_ref.any()):
            continue
        assert g is not None and bool(torch.isfinite(g).all())
        err = rel_err(g, g_ref)
        assert err <= tol, f'gradient off by {err:.2e} (> {tol:.0e})'


def assert_finite(fn, inputs, dtype):
    out, grads = run(fn, inputs, dtype)
    assert bool(torch.isfinite(out).all()), out
    for g in grads:
        assert g is None or bool(torch.isfinite(g).all())


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ the KL
def kl_inputs(scale=0.05, seed=0, channels=16, size=5):
    g = gen(seed)
    shape = (2, channels, size, size)
    mu = scale * torch.randn(*shape, generator=g)
    logvar = torch.relu(scale * torch.randn(*shape, generator=g))
    mask = torch.rand(2, size, size, generator=g) > 0.3
    return [mu, logvar, mask]


@pytest.mark.parametrize('dtype', DTYPES)
def test_kl_divergence_matches_fp32(dtype):
    """KL of a latent near N(0, I) (the SIM's init: logvar ≈ 0, where
    ``1 + logvar - mu² - exp(logvar)`` cancels), α = 100 included."""
    for scale in (0.01, 0.05, 0.5):
        assert_close(lambda *a: 100 * kl_divergence(*a), kl_inputs(scale),
                     dtype)


@pytest.mark.parametrize('dtype', DTYPES)
def test_kl_divergence_without_float32_region_fails(dtype):
    """The same formula in the autocast dtype (no float32 region) is off
    by far more than the tolerance: the region is what passes the test."""
    raw = kl_divergence.__wrapped__
    inputs = kl_inputs(0.01)
    ref, _ = run(raw, inputs)
    out, _ = run(raw, inputs, dtype)
    assert rel_err(out, ref) > 10 * TOL[dtype]


@pytest.mark.parametrize('dtype', DTYPES)
def test_kl_divergence_hostile_logvar(dtype):
    """logvar of ±20: exp(20) = 4.9e8 overflows float16 (max 65504). The
    gradient per element, 0.5 (exp(logvar) - 1) / (channels · pixels),
    reaches the float16 layer before it, so it must itself fit float16
    (when it does not, the loss scaler lowers its scale until it does): 64
    channels over 40 × 40 pixels, as a feature map of a real crop."""
    mu, _, mask = kl_inputs(channels=64, size=40)
    logvar = torch.full_like(mu, 20.0)
    logvar[0] = -20.0
    assert_finite(kl_divergence, [mu, logvar, mask], dtype)
    out, _ = run(kl_divergence, [mu, logvar, mask], dtype)
    ref, _ = run(kl_divergence, [mu, logvar, mask])
    assert rel_err(out, ref) <= TOL[dtype]


# ------------------------------------------------------------------ the MMD
def mmd_inputs(norm=None, seed=0, n=48, d=32):
    g = gen(seed)
    real = torch.sigmoid(torch.randn(n, d, generator=g))  # F_x: sigmoid
    fake = torch.sigmoid(torch.randn(n, d, generator=g) + 0.3)
    if norm is not None:  # hostile: feature norms of `norm`
        real = norm * real / real.norm(dim=1, keepdim=True)
        fake = norm * fake / fake.norm(dim=1, keepdim=True)
    labels = torch.arange(n) % 3
    return real, fake, labels


@pytest.mark.parametrize('dtype', DTYPES)
def test_gaussian_mmd_matches_fp32(dtype):
    real, fake, _ = mmd_inputs()
    sigmas = [v**0.5 for v in (2, 5, 10, 20, 40, 60)]
    assert_close(lambda x, y: gaussian_mmd(x, y, sigmas), [real, fake], dtype)


@pytest.mark.parametrize('estimator', ['squared', 'released'])
@pytest.mark.parametrize('dtype', DTYPES)
def test_class_mmd_loss_matches_fp32(dtype, estimator):
    real, fake, labels = mmd_inputs()
    assert_close(
        lambda x, y, c: 50 * class_mmd_loss(x, y, c,
                                            (2, 5, 10, 20, 40, 60), estimator),
        [real, fake, labels], dtype)


@pytest.mark.parametrize('estimator', ['squared', 'released'])
@pytest.mark.parametrize('dtype', DTYPES)
def test_class_mmd_loss_hostile_norms(dtype, estimator):
    """Feature norms of 1e3: squared distances ~1e6 (float16 overflows at
    65504)."""
    real, fake, labels = mmd_inputs(norm=1e3)
    fn = lambda x, y, c: class_mmd_loss(  # noqa: E731
        x, y, c, (2, 5, 10, 20, 40, 60), estimator)
    assert_finite(fn, [real, fake, labels], dtype)
    out, _ = run(fn, [real, fake, labels], dtype)
    assert float(out) > 0


# ------------------------------------------------------ attention in the SIM
def attention_encoder(seed=0):
    torch.manual_seed(seed)
    return SelfAttentionEncoder(24, 16, num_heads=2).eval()


@pytest.mark.parametrize('dtype', DTYPES)
def test_sim_attention_matches_fp32(dtype):
    """The SIM's multi-head self-attention (SDPA over all positions, the
    convs around it) in the autocast dtype: within the tolerance of a
    half-precision matrix product chain (4x the op tolerance)."""
    enc = attention_encoder()
    x = torch.rand(2, 24, 6, 7, generator=gen())
    w = torch.randn(2, 16, 6, 7, generator=gen(1))
    assert_close(enc, [x], dtype, tol=4 * TOL[dtype], weights=w)


@pytest.mark.parametrize('dtype', DTYPES)
def test_attention_hostile_logits(dtype):
    """Attention logits of 1e4 (q·k / √d): the softmax is one-hot, the
    output and gradients finite."""
    g = gen()
    q = torch.randn(1, 2, 20, 8, generator=g)
    k = torch.randn(1, 2, 20, 8, generator=g)
    q = q / q.norm(dim=-1, keepdim=True) * 100.0 * 8**0.25
    k = k / k.norm(dim=-1, keepdim=True) * 100.0 * 8**0.25
    logits = (q @ k.transpose(-1, -2)) / 8**0.5
    assert float(logits.abs().max()) > 5e3
    v = torch.randn(1, 2, 20, 8, generator=g)
    assert_finite(F.scaled_dot_product_attention, [q, k, v], dtype)


# ------------------------------------------------- AST weights, confidences
def confidences(seed=0, n=400):
    """Softmax confidences of a confident teacher (most near 1)."""
    logits = 4 * torch.randn(n, 6, generator=gen(seed))
    return logits.softmax(dim=1).max(dim=1).values


@pytest.mark.parametrize('temperature', [2.0, 0.2, 0.05])
@pytest.mark.parametrize('dtype', DTYPES)
def test_annealed_weights_match_fp32(dtype, temperature):
    """eq. 16 at the paper's T = 2, the toy's 0.2 and a hostile 0.05
    (exp(-1 / 0.05) = 2e-9, below float16's smallest number): each weight
    within the tolerance of the float32 weight of the rounded confidence
    (rounding p shifts exp((p - p_max) / T) by up to 2^-9 / T)."""
    conf = confidences()
    rounded = conf.to(dtype).float()
    with torch.autocast('cpu', dtype=dtype):
        w = annealed_weights(conf.to(dtype), temperature)
    assert w.dtype == torch.float32 and bool(torch.isfinite(w).all())
    ref = annealed_weights(rounded, temperature)
    assert torch.allclose(w, ref, rtol=1e-6, atol=0)
    assert bool((w > 0).all())  # none flushed to 0


@pytest.mark.parametrize('dtype', DTYPES)
def test_annealed_weights_without_float32_region_fail(dtype):
    """In the autocast dtype the smallest weights at T = 0.05 are lost
    (float16: flushed to 0; bfloat16: off by the exponent's rounding)."""
    conf = confidences()
    ref = annealed_weights(conf, 0.05)
    with torch.autocast('cpu', dtype=dtype):
        half = annealed_weights.__wrapped__(conf.to(dtype), 0.05)
    assert rel_err(half, ref) > 1e-3 or bool((half == 0).any())


@pytest.mark.parametrize('dtype', DTYPES)
def test_pseudo_label_confidences_in_float32(dtype, embedding_table):
    """The head's pseudo labels from half-precision teacher logits: the
    softmax runs in float32, so targets equal the float32 targets of the
    rounded logits and weights match them to float32 rounding."""
    from model_utils import build_head, samples
    head = build_head(embedding_table[0])
    g = gen()
    logits = 6 * torch.randn(2, 5, 8, 12, generator=g)
    labels = torch.randint(0, 3, (2, 8, 12), generator=g)
    labels[:, 3:6] = 255
    ds = samples(labels)
    rounded = logits.to(dtype).float()
    ref_t, ref_w, _ = head.pseudo_labels(rounded, ds, 'AST', 0.05, 75.0)
    with torch.autocast('cpu', dtype=dtype):
        t, w, stats = head.pseudo_labels(
            logits.to(dtype), ds, 'AST', 0.05, 75.0)
    assert w.dtype == torch.float32
    assert torch.equal(t, ref_t)
    assert torch.allclose(w, ref_w, rtol=1e-6, atol=0)
    assert bool((w[labels == 255] > 0).all())
    assert stats['st_confidence'].dtype == torch.float32


# --------------------------------------- adversarial losses, weighted CE
def d_logits(scale=3.0, n=300, seed=0):
    return scale * torch.randn(n, generator=gen(seed))


@pytest.mark.parametrize('dtype', DTYPES)
def test_adversarial_losses_match_fp32(dtype):
    real, fake = d_logits(), d_logits(seed=1) - 1
    assert_close(lambda x: adversarial_loss(x, real=True), [fake], dtype)
    for reduction in ('mean', 'sum'):
        assert_close(lambda a, b: discriminator_loss(a, b, reduction),
                     [real, fake], dtype)


@pytest.mark.parametrize('dtype', DTYPES)
def test_adversarial_losses_hostile_logits(dtype):
    """D's logits of ±1e4: losses and gradients finite."""
    real, fake = 1e4 * torch.sign(d_logits()), -1e4 * torch.ones(300)
    assert_finite(lambda a, b: discriminator_loss(a, b), [real, fake], dtype)
    assert_finite(lambda x: adversarial_loss(x, real=True), [fake], dtype)


@pytest.mark.parametrize('dtype', DTYPES)
def test_weighted_cross_entropy_matches_fp32(dtype, embedding_table):
    """C's per-pixel weighted CE (AST, eq. 16) and plain CE, logits
    upsampled to the labels as in training."""
    from model_utils import build_head
    head = build_head(embedding_table[0])
    g = gen()
    logits = 3 * torch.randn(2, 5, 4, 6, generator=g)
    labels = torch.randint(0, 5, (2, 8, 12), generator=g)
    labels[:, :2] = 255
    weights = torch.rand(2, 8, 12, generator=g)**4  # many small weights
    assert_close(lambda x, y, w: head._weighted_cross_entropy(x, y, w),
                 [logits, labels, weights], dtype)
    assert_close(
        lambda x, y: head._cross_entropy(
            F.interpolate(x, size=(8, 12), mode='bilinear'), y),
        [logits, labels], dtype)
