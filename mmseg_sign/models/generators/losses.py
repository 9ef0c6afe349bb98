"""G's feature-matching loss (paper eq. 5) and the pixels it is computed
on."""
from typing import Sequence

import torch
from torch import Tensor

from ..losses import float32_op

MMD_ESTIMATORS = ('squared', 'released')


@float32_op  # as gaussian_mmd; sqrt of a tiny MMD² too
def class_mmd_loss(real: Tensor,
                   fake: Tensor,
                   labels: Tensor,
                   kernel_variances: Sequence[float],
                   estimator: str = 'squared',
                   max_entries: int = 2**23) -> Tensor:
    """MMD between real and generated pixel features ``[N, C]`` of each
    class in ``labels [N]``, with Gaussian kernels ``exp(-d² / (2v))``
    summed over the *variances* ``v``. ``estimator='squared'``: the biased
    MMD² of each class, summed over classes (eq. 5); ``'released'``: the
    authors' ``sqrt(½·MMD²)`` of each class, averaged over classes
    (the released code, docs/reproduction.md). 0 (with a graph to ``fake``)
    without pixels.

    The classes are batched (a few kernels for all classes, not a few per
    class): each class's real and generated pixels are padded to
    the largest class's count ``P`` in a ``[K, 2P, C]`` tensor, one batched
    product gives every class's ``[2P, 2P]`` squared distances, and each
    class's ``Σ k(r, r') + Σ k(f, f') − 2 Σ k(r, f)`` is ``wᵀ K w`` with
    ``w`` = +1 (real), −1 (generated), 0 (padding). At most
    ``max_entries`` kernel entries at once (classes in chunks). Equal to
    :func:`gaussian_mmd` per class up to float rounding (tested).

    Args:
        real (Tensor): real features ``[N, C]``.
        fake (Tensor): generated features ``[N, C]`` at the same pixels.
        labels (Tensor): the pixels' classes ``[N]``.
        kernel_variances (Sequence[float]): the kernels' variances ``v``.
        estimator (str): ``'squared'`` or ``'released'``.
        max_entries (int): the most kernel-matrix entries at once.

    Returns:
        Tensor: the scalar loss.
    """
    if estimator not in MMD_ESTIMATORS:
        raise ValueError(f'mmd_estimator must be one of {MMD_ESTIMATORS}, '
                         f'got {estimator!r}.')
    loss = fake.new_zeros(()) + 0 * fake.sum()
    if labels.numel() == 0:
        return loss
    xy, weights, counts = _padded_by_class(real, fake, labels)
    per_chunk = max(1, max_entries // xy.shape[1]**2)
    mmd2 = []
    for i in range(0, xy.shape[0], per_chunk):
        x, w = xy[i:i + per_chunk], weights[i:i + per_chunk, :, None]
        sq = (x.pow(2).sum(-1, keepdim=True) + x.pow(2).sum(-1)[:, None] -
              2 * x @ x.transpose(1, 2)).clamp(min=0)  # [k, 2P, 2P]
        kernel = sum(torch.exp(sq * (-0.5 / v)) for v in kernel_variances)
        mmd2.append((w.transpose(1, 2) @ kernel @ w).flatten())
    mmd2 = torch.cat(mmd2) / counts.to(real.dtype).pow(2)  # [K]
    if estimator == 'released':
        # sqrt(½·MMD²), mean over classes; clamped: d sqrt at 0
        return loss + (0.5 * mmd2).clamp(min=1e-12).sqrt().mean()
    return loss + mmd2.sum()


def _padded_by_class(real: Tensor, fake: Tensor, labels: Tensor) -> tuple:
    """``([K, 2P, C] real then generated pixels of each class, zero-padded
    to the largest count P; [K, 2P] weights +1 / −1 / 0 (padding);
    [K] counts)`` for the K classes in ``labels``."""
    classes, inverse, counts = labels.unique(
        return_inverse=True, return_counts=True)
    order = inverse.argsort(stable=True)
    cls = inverse[order]
    starts = counts.cumsum(0) - counts
    slot = torch.arange(len(order), device=labels.device) - starts[cls]
    k, p, c = len(classes), int(counts.max()), real.shape[1]
    xy = real.new_zeros(k, 2 * p, c)
    xy = xy.index_put((cls, slot), real[order]).index_put((cls, slot + p),
                                                          fake[order])
    weights = real.new_zeros(k, 2 * p).index_put((cls, slot), real.new_ones(
        ())).index_put((cls, slot + p), real.new_full((), -1.0))
    return xy, weights, counts


def sample_per_class(labels: Tensor,
                     max_pixels: int,
                     ignore_index: int = 255) -> Tensor:
    """Indices into the flattened ``labels [N]``: for each labelled class,
    at most ``max_pixels`` random pixels (the pixels G is trained on).

    Args:
        labels (Tensor): pixel labels ``[N]``.
        max_pixels (int): the most pixels kept per class.
        ignore_index (int): the label of unlabelled pixels (never kept).

    Returns:
        Tensor: indices ``[M]`` into ``labels``.
    """
    picked = []
    for c in labels[labels != ignore_index].unique():
        idx = (labels == c).nonzero().flatten()
        if idx.numel() > max_pixels:
            idx = idx[torch.randperm(idx.numel(),
                                     device=idx.device)[:max_pixels]]
        picked.append(idx)
    return torch.cat(picked) if picked else labels.new_zeros(0)
