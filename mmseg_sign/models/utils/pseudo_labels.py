"""Pseudo labels of (annealed) self-training, paper section 3.4, eq. 16."""
import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from ...structures.stage_plan import AST_CANDIDATES, ST_MODES
from ..losses import annealed_weights


def top_p_mask(confidence: Tensor, labels: Tensor, top_p: float) -> Tensor:
    """ST selection: for every class in ``labels [N]``, keep the ``top_p``
    percent most confident of its pixels (``ceil(n · top_p / 100)`` of n).

    Returns a bool mask ``[N]``.

    Args:
        confidence (Tensor): the pixels' confidence ``[N]``.
        labels (Tensor): their pseudo labels ``[N]``.
        top_p (float): the percentage kept per class, in ``(0, 100]``.
    """
    if not 0 < top_p <= 100:
        raise ValueError(f'top_p is a percentage in (0, 100], got {top_p}.')
    keep = torch.zeros_like(labels, dtype=torch.bool)
    for c in labels.unique():
        idx = (labels == c).nonzero().flatten()
        k = math.ceil(idx.numel() * top_p / 100)
        best = confidence[idx].topk(k).indices
        keep[idx[best]] = True
    return keep


def pseudo_label_image(
        probs: Tensor,
        label: Tensor,
        unseen_ids: Tensor,
        valid: Optional[Tensor] = None,
        mode: str = 'AST',
        temperature: float = 2.0,
        top_p: float = 75.0,
        ignore_index: int = 255,
        top_k: int = 1,
        candidates: str = 'ignored') -> Tuple[Tensor, Tensor, Tensor]:
    """Targets and weights of one image for self-training.

    Pixels labelled with a (seen) class keep their label with weight 1.
    Pixels whose label is ``ignore_index`` and that are inside the image
    (``valid``; crop padding never is) get the teacher's best *unseen*
    class as pseudo label, with its softmax probability as confidence:

    * ``'AST'`` (the paper, eq. 16): all of them, weighted by
      :func:`annealed_weights` over this image's pseudo-labelled pixels
      (largest weight 1). The authors' released code zeroes the confidence
      before the softmax, so its weights are uniform: ``'AST'`` with a very
      large ``temperature``. ``candidates='predicted_unseen'`` keeps only
      the pixels whose arg-max over all classes is unseen (ZS3's
      candidates), weighted by eq. 16 over them.
    * ``'ST'`` (ZS3's self-training, the paper's ST baseline): only pixels
      whose arg-max over *all* classes is an unseen class are candidates;
      per unseen class the ``top_p`` percent most confident get weight 1.
    * ``'ST_topk'`` (CaGNet's self-training): a pixel is labelled with its
      best unseen class when that class ranks among its ``top_k`` classes.

    Args:
        probs: teacher softmax ``[K, H, W]``.
        label: training label ``[H, W]`` (unseen classes already ignored).
        unseen_ids: indices of the unseen classes ``[U]``.
        valid: bool ``[H, W]``, False on padding. Default: all True.

    Returns:
        ``(target [H, W] long, weight [H, W] float, confidence [M])`` where
        pixels with weight 0 have target ``ignore_index`` and
        ``confidence`` holds the kept pseudo labels' confidences.
    """
    if mode not in ST_MODES:
        raise ValueError(f'self-training mode must be one of {ST_MODES}, '
                         f'got {mode!r}.')
    target = label.clone()
    weight = (label != ignore_index).to(probs.dtype)
    pseudo = label == ignore_index
    if valid is not None:
        pseudo &= valid
    pixel_probs = probs[:, pseudo]  # [K, M]
    conf, best = pixel_probs[unseen_ids].max(dim=0)
    classes = unseen_ids[best]
    if mode == 'ST':
        keep = torch.isin(pixel_probs.argmax(dim=0), unseen_ids)
        keep[keep.clone()] = top_p_mask(conf[keep], classes[keep], top_p)
        w = keep.to(probs.dtype)
    elif mode == 'ST_topk':
        # rank of the best unseen class among all K classes (0 = top)
        rank = (pixel_probs > conf[None]).sum(dim=0)
        keep = rank < top_k
        w = keep.to(probs.dtype)
    else:
        if candidates not in AST_CANDIDATES:
            raise ValueError(f'AST candidates must be one of '
                             f'{AST_CANDIDATES}, got {candidates!r}.')
        if candidates == 'ignored':
            keep = torch.ones_like(conf, dtype=torch.bool)
        else:
            keep = torch.isin(pixel_probs.argmax(dim=0), unseen_ids)
        w = torch.zeros_like(conf)
        w[keep] = annealed_weights(conf[keep], temperature)
    target[pseudo] = torch.where(keep, classes,
                                 torch.full_like(classes, ignore_index))
    weight[pseudo] = w
    return target, weight, conf[keep]
