"""SIGN losses against naive / closed-form references."""
import math

import pytest
import torch
from torch.distributions import Normal
from torch.distributions import kl_divergence as torch_kl

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


def per_class_mmd(real, fake, labels, variances, estimator):
    """The per-class loop of eq. 5 (the loss before it was batched) on
    :func:`gaussian_mmd`: an independent reference for the batched loss."""
    sigmas = [v**0.5 for v in variances]
    classes = labels.unique()
    terms = [
        gaussian_mmd(real[labels == c], fake[labels == c], sigmas)
        for c in classes
    ]
    if estimator == 'released':
        return sum(
            (0.5 * t).clamp(min=1e-12).sqrt() for t in terms) / len(classes)
    return sum(terms)


@pytest.mark.parametrize('estimator', ['squared', 'released'])
@pytest.mark.parametrize('max_entries', [2**23, 128, 64])  # 1, 3, 5 chunks
def test_class_mmd_loss_batched_equals_per_class(estimator, max_entries):
    from mmseg_sign.models.generators import class_mmd_loss
    g = torch.Generator().manual_seed(4)
    labels = torch.tensor([3, 3, 0, 7, 3, 0, 9, 7, 7, 3, 12])
    real = torch.rand(11, 5, generator=g, dtype=torch.float64)
    fake = torch.rand(11, 5, generator=g, dtype=torch.float64)
    fake[2] = real[2]  # a zero distance
    variances = (2, 5, 20)
    fa, fb = fake.clone().requires_grad_(), fake.clone().requires_grad_()
    got = class_mmd_loss(
        real, fa, labels, variances, estimator, max_entries=max_entries)
    want = per_class_mmd(real, fb, labels, variances, estimator)
    assert float(got) == pytest.approx(float(want), rel=1e-10)
    got.backward()
    want.backward()
    torch.testing.assert_close(fa.grad, fb.grad, rtol=1e-9, atol=1e-12)


def test_class_mmd_loss_without_pixels_is_zero_with_a_graph():
    from mmseg_sign.models.generators import class_mmd_loss
    fake = torch.rand(0, 4, requires_grad=True)
    out = class_mmd_loss(torch.rand(0, 4), fake, torch.zeros(0).long(), (2, ))
    out.backward()
    assert out.item() == 0.0 and fake.grad is not None
