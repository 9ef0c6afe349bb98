"""G's feature-matching loss (paper eq. 5) and the pixels it is computed
on."""
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..losses import float32_op
from ..losses.sign_losses import squared_distances

MMD_ESTIMATORS = ('squared', 'released')


@float32_op  # as gaussian_mmd; sqrt of a tiny MMD² too
def class_mmd_loss(real: Tensor, fake: Tensor, labels: Tensor,
                   kernel_variances: Sequence[float],
                   estimator: str = 'squared',
                   group_pixels: int = 1024) -> Tensor:
    """MMD between real and generated pixel features ``[N, C]`` of each
    class in ``labels [N]``, with Gaussian kernels ``exp(-d² / (2v))``
    summed over the *variances* ``v``. ``estimator='squared'``: the biased
    MMD² of each class, summed over classes (eq. 5); ``'released'``: the
    authors' ``sqrt(½·MMD²)`` of each class, averaged over classes
    (the released code, docs/reproduction.md). 0 (with a graph to ``fake``)
    without pixels.

    All classes at once (issue 32: a few kernels instead of a few per
    class): one kernel matrix over the real and generated pixels of a
    group of classes, and each class's ``Σ k(r, r') + Σ k(f, f') −
    2 Σ k(r, f)`` as ``((K · S) ⊙ S).sum(0)`` with ``S`` the pixels'
    one-hot classes signed +1 (real) / −1 (generated): cross-class entries
    get weight 0. Classes are grouped so that a group has at most
    ``group_pixels`` pixels (the matrix is ``(2·pixels)²``); a class with
    more is a group alone. Equal to :func:`gaussian_mmd` per class up to
    float rounding (tested).

    Args:
        real (Tensor): real features ``[N, C]``.
        fake (Tensor): generated features ``[N, C]`` at the same pixels.
        labels (Tensor): the pixels' classes ``[N]``.
        kernel_variances (Sequence[float]): the kernels' variances ``v``.
        estimator (str): ``'squared'`` or ``'released'``.
        group_pixels (int): the most pixels in one kernel matrix.

    Returns:
        Tensor: the scalar loss.
    """
    if estimator not in MMD_ESTIMATORS:
        raise ValueError(f'mmd_estimator must be one of {MMD_ESTIMATORS}, '
                         f'got {estimator!r}.')
    loss = fake.new_zeros(()) + 0 * fake.sum()
    if labels.numel() == 0:
        return loss
    classes, inverse, counts = labels.unique(return_inverse=True,
                                             return_counts=True)
    signed = F.one_hot(inverse, len(classes)).to(real.dtype)  # [N, K]
    signed = torch.cat([signed, -signed])  # [2N, K]: real +1, fake −1
    xy = torch.cat([real, fake])  # [2N, C]
    mmd2 = []
    for group in _class_groups(counts.tolist(), group_pixels):
        if len(group) == len(classes):
            gxy, gs = xy, signed
        else:
            keep = torch.isin(inverse, inverse.new_tensor(group))
            gxy, gs = xy[torch.cat([keep, keep])], \
                signed[torch.cat([keep, keep])][:, group]
        sq = squared_distances(gxy, gxy)
        kernel = sum(torch.exp(sq * (-0.5 / v)) for v in kernel_variances)
        mmd2.append(((kernel @ gs) * gs).sum(0))
    mmd2 = torch.cat(mmd2) / counts.to(real.dtype).pow(2)  # [K]
    if estimator == 'released':
        # sqrt(½·MMD²), mean over classes; clamped: d sqrt at 0
        return loss + (0.5 * mmd2).clamp(min=1e-12).sqrt().sum() / len(
            classes)
    return loss + mmd2.sum()


def _class_groups(counts: list, group_pixels: int) -> list:
    """Consecutive class indices in groups of at most ``group_pixels``
    pixels (``counts``: pixels per class; a larger class alone)."""
    groups, current, size = [], [], 0
    for k, n in enumerate(counts):
        if current and size + n > group_pixels:
            groups.append(current)
            current, size = [], 0
        current.append(k)
        size += n
    return groups + [current]


def sample_per_class(labels: Tensor, max_pixels: int,
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
