"""SIGN losses against naive / closed-form references."""
import math

import pytest
import torch
from torch.distributions import Normal, kl_divergence as torch_kl

from mmseg_sign.models.losses import (adversarial_loss, annealed_weights,
                                      gaussian_mmd, kl_divergence)
from mmseg_sign.models.losses.sign_losses import squared_distances


def naive_mmd(x, y, sigmas):
    def k(a, b):
        d2 = sum((ai - bi)**2 for ai, bi in zip(a, b))
        return sum(math.exp(-d2 / (2 * s * s)) for s in sigmas)

    x, y = x.tolist(), y.tolist()
    kxx = sum(k(a, b) for a in x for b in x) / len(x)**2
    kyy = sum(k(a, b) for a in y for b in y) / len(y)**2
    kxy = sum(k(a, b) for a in x for b in y) / (len(x) * len(y))
    return kxx + kyy - 2 * kxy


@pytest.mark.parametrize('sigmas', [(1.0, ), (0.5, 2.0, 5.0)])
def test_gaussian_mmd_matches_double_loop(sigmas):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 3, generator=g, dtype=torch.float64)
    y = torch.randn(5, 3, generator=g, dtype=torch.float64) + 0.7
    got = gaussian_mmd(x, y, sigmas).item()
    assert got == pytest.approx(naive_mmd(x, y, sigmas), rel=1e-9)
    assert gaussian_mmd(x, x, sigmas).item() == pytest.approx(0, abs=1e-12)


def naive_mmd_autograd(x, y, sigmas):
    """MMD² from explicit pairwise differences (no matrix-product form):
    an independent autograd reference for gradients."""
    xy = torch.cat([x, y])
    d2 = (xy[:, None] - xy[None]).pow(2).sum(-1)
    k = sum(torch.exp(-d2 / (2 * s * s)) for s in sigmas)
    n = len(x)
    return k[:n, :n].mean() + k[n:, n:].mean() - 2 * k[:n, n:].mean()


def test_squared_distances_match_pairwise_differences():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(30, 6, generator=g, dtype=torch.float64)
    y = torch.rand(4, 6, generator=g, dtype=torch.float64)
    y[0] = x[3]  # a zero distance
    want = (x[:, None] - y[None]).pow(2).sum(-1)
    got = squared_distances(x, y)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert float(got.min()) >= 0


@pytest.mark.parametrize('n', [3, 20])  # below / above cdist's 25 rows
def test_gaussian_mmd_gradient_with_coincident_features(n):
    """Generated features equal to real ones (zero distances, where
    cdist's square root has no derivative): the gradient is finite and
    equals the pairwise-difference reference's."""
    g = torch.Generator().manual_seed(2)
    x = torch.rand(n, 5, generator=g, dtype=torch.float64)
    y = x.clone()
    y[1:] += 0.3 * torch.rand(n - 1, 5, generator=g, dtype=torch.float64)
    sigmas = (2**0.5, 20**0.5)
    ya, yb = y.clone().requires_grad_(), y.clone().requires_grad_()
    gaussian_mmd(x, ya, sigmas).backward()
    naive_mmd_autograd(x, yb, sigmas).backward()
    assert torch.isfinite(ya.grad).all()
    torch.testing.assert_close(ya.grad, yb.grad, rtol=1e-7, atol=1e-10)


def test_gaussian_mmd_empty_is_zero():
    x = torch.randn(0, 4, requires_grad=True)
    y = torch.randn(3, 4)
    out = gaussian_mmd(x, y, (1.0, ))
    assert out.item() == 0.0 and torch.isfinite(out)


def test_kl_matches_closed_form_over_masked_pixels():
    g = torch.Generator().manual_seed(1)
    mu = torch.randn(2, 3, 4, 5, generator=g)
    logvar = torch.randn(2, 3, 4, 5, generator=g) * 0.5
    mask = torch.rand(2, 4, 5, generator=g) > 0.4
    per_pixel = torch_kl(
        Normal(mu, (0.5 * logvar).exp()),
        Normal(torch.zeros_like(mu), torch.ones_like(mu))).mean(1)
    want = per_pixel[mask].mean()
    torch.testing.assert_close(kl_divergence(mu, logvar, mask), want)
    empty = kl_divergence(mu, logvar, torch.zeros_like(mask))
    assert empty.item() == 0.0


def test_adversarial_loss_by_hand():
    logits = torch.tensor([0.0, 2.0])
    want_real = (math.log(2) + math.log(1 + math.exp(-2))) / 2
    want_fake = (math.log(2) + math.log(1 + math.exp(2))) / 2
    assert adversarial_loss(logits, True).item() == pytest.approx(want_real)
    assert adversarial_loss(logits, False).item() == pytest.approx(want_fake)


def test_annealed_weights_formula():
    p = torch.tensor([0.9, 0.5, 0.2, 0.7])
    t = 2.0
    soft = torch.exp(p / t) / torch.exp(p / t).sum()
    torch.testing.assert_close(annealed_weights(p, t), soft / soft.max())
    assert annealed_weights(p, 1e4).min() > 0.999
    tiny = annealed_weights(p, 1e-3)
    assert tiny[0] == 1.0 and tiny[1:].max() < 1e-30
    with pytest.raises(ValueError):
        annealed_weights(p, 0.0)
