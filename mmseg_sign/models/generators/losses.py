"""G's feature-matching loss (paper eq. 5) and the pixels it is computed
on."""
from typing import Sequence

import torch
from torch import Tensor

from ..losses import float32_op, gaussian_mmd

MMD_ESTIMATORS = ('squared', 'released')


@float32_op  # as gaussian_mmd; sqrt of a tiny MMD² too
def class_mmd_loss(real: Tensor, fake: Tensor, labels: Tensor,
                   kernel_variances: Sequence[float],
                   estimator: str = 'squared') -> Tensor:
    """MMD between real and generated pixel features ``[N, C]`` of each
    class in ``labels [N]``, with Gaussian kernels ``exp(-d² / (2v))``
    summed over the *variances* ``v``. ``estimator='squared'``: the biased
    MMD² of each class, summed over classes (eq. 5); ``'released'``: the
    authors' ``sqrt(½·MMD²)`` of each class, averaged over classes
    (the released code, docs/reproduction.md). 0 (with a graph to ``fake``) without pixels.

    Args:
        real (Tensor): real features ``[N, C]``.
        fake (Tensor): generated features ``[N, C]`` at the same pixels.
        labels (Tensor): the pixels' classes ``[N]``.
        kernel_variances (Sequence[float]): the kernels' variances ``v``.
        estimator (str): ``'squared'`` or ``'released'``.

    Returns:
        Tensor: the scalar loss.
    """
    if estimator not in MMD_ESTIMATORS:
        raise ValueError(f'mmd_estimator must be one of {MMD_ESTIMATORS}, '
                         f'got {estimator!r}.')
    sigmas = [v**0.5 for v in kernel_variances]
    loss = fake.new_zeros(()) + 0 * fake.sum()
    classes = labels.unique()
    for c in classes:
        sel = labels == c
        mmd2 = gaussian_mmd(real[sel], fake[sel], sigmas)
        if estimator == 'released':
            # sqrt(½·MMD²), mean over classes; clamped: d sqrt at 0
            mmd2 = (0.5 * mmd2).clamp(min=1e-12).sqrt() / len(classes)
        loss = loss + mmd2
    return loss


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
