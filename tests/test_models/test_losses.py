"""SIGN losses against naive / closed-form references."""
import math

import pytest
import torch
from torch.distributions import Normal, kl_divergence as torch_kl

from mmseg_sign.models.losses import (adversarial_loss, annealed_weights,
                                      gaussian_mmd, kl_divergence)


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
