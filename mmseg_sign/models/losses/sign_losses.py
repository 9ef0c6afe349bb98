"""Losses of SIGN: MMD (eq. 5), KL (eq. 2), adversarial (eq. 6), AST
weights (eq. 16)."""
from typing import Sequence

import torch
import torch.nn.functional as F

from .precision import float32_op


def squared_distances(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``‖x_i − y_j‖²`` ``[N, M]`` for ``x [N, D]``, ``y [M, D]``, as
    ``‖x‖² + ‖y‖² − 2·x·yᵀ`` clamped at 0: one matrix product and
    element-wise terms, the same on every device, whose gradient is
    defined everywhere. ``torch.cdist(x, y).pow(2)`` (used before) takes
    the square root and squares it again, and picks a device- and
    size-dependent kernel (its own CUDA / CPU kernels up to 25 rows, the
    matrix-product form above that) whose backward must special-case a
    zero distance (docs/gpu.md).

    Args:
        x (Tensor): ``[N, D]``.
        y (Tensor): ``[M, D]``.

    Returns:
        Tensor: ``[N, M]``, ≥ 0.
    """
    sq = (x.pow(2).sum(1)[:, None] + y.pow(2).sum(1)[None, :] - 2 * x @ y.T)
    return sq.clamp(min=0)


# float32: MMD² is a small difference of kernel means that half precision
# rounds away, and exp(-d²/2s²) underflows float16 (autocast's own lists
# differ: exp runs in float32 on CUDA, in the input's dtype on a CPU)
@float32_op
def gaussian_mmd(
        x: torch.Tensor,
        y: torch.Tensor,
        sigmas: Sequence[float] = (1.0, ),
) -> torch.Tensor:
    """Biased MMD² between samples ``x [N, D]`` and ``y [M, D]`` (eq. 5).

    ``mean k(x, x') + mean k(y, y') - 2 mean k(x, y)`` with the kernel
    ``k(a, b) = Σ_s exp(-‖a - b‖² / (2 s²))``. Returns a scalar (0 when
    either set is empty).

    Args:
        x (Tensor): samples ``[N, D]``.
        y (Tensor): samples ``[M, D]``.
        sigmas (Sequence[float]): the kernels' standard deviations.

    Returns:
        Tensor: the scalar MMD².
    """
    if x.numel() == 0 or y.numel() == 0:
        return x.new_zeros(()) + 0 * y.sum()
    xy = torch.cat([x, y], dim=0)
    sq = squared_distances(xy, xy)
    kernel = sum(torch.exp(-sq / (2 * s * s)) for s in sigmas)
    n = x.shape[0]
    return (kernel[:n, :n].mean() + kernel[n:, n:].mean() -
            2 * kernel[:n, n:].mean())


# float32: with logvar ≈ 0 the terms of 1 + logvar - mu² - exp(logvar)
# cancel (bfloat16 rounds 1 + logvar to 1 below |logvar| = 2^-8), and
# exp(logvar) overflows float16 above logvar ≈ 11
@float32_op
def kl_divergence(mu: torch.Tensor, logvar: torch.Tensor,
                  mask: torch.Tensor) -> torch.Tensor:
    """``KL(N(mu, σ²) ‖ N(0, I))`` (eq. 2) per latent dimension: averaged
    over channels (as CaGNet, so α = 100 does not scale with the latent
    size) and over the pixels where ``mask`` is True; 0 if there are none.

    Args:
        mu, logvar: ``[B, C, H, W]``.
        mask: ``[B, H, W]`` bool.
    """
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).mean(dim=1)
    return masked_mean(kl, mask)


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values[mask]``; an exact, differentiable 0 when empty.

    Args:
        values (Tensor): any shape.
        mask (Tensor): bool, the shape of ``values``.

    Returns:
        Tensor: the scalar mean.
    """
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp(min=1)


def adversarial_loss(logits: torch.Tensor, real: bool) -> torch.Tensor:
    """Standard (non-saturating) GAN loss on D's logits (eq. 6).

    Args:
        logits (Tensor): D's logits ``[N]``.
        real (bool): the target: real (1) or generated (0).

    Returns:
        Tensor: the scalar binary cross-entropy.
    """
    if logits.numel() == 0:
        return logits.sum()
    target = torch.ones_like(logits) if real else torch.zeros_like(logits)
    return F.binary_cross_entropy_with_logits(logits, target)


# float32: exp((p - p_max) / T) reaches exp(-1 / T), 2e-9 at T = 0.05,
# below float16's smallest number (6e-8)
@float32_op
def annealed_weights(confidence: torch.Tensor,
                     temperature: float) -> torch.Tensor:
    """AST weights of one image's pseudo-labelled pixels (eq. 16).

    ``w_i = exp(p_i/T) / Σ_j exp(p_j/T)``, divided by its maximum so the
    largest weight is 1, i.e. ``exp((p_i - p_max) / T)``.

    Args:
        confidence (Tensor): the teacher's confidence ``p_i`` ``[N]``.
        temperature (float): ``T`` > 0.

    Returns:
        Tensor: the weights ``[N]`` in ``(0, 1]``.
    """
    if temperature <= 0:
        raise ValueError(f'temperature must be > 0, got {temperature}.')
    if confidence.numel() == 0:
        return confidence.clone()
    return torch.exp((confidence - confidence.max()) / temperature)
