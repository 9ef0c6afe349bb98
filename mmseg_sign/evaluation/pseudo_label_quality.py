"""How good are self-training's pseudo labels (paper section 3.4)? Pixel
groups against the true labels and the AST weights (eq. 16) of each
(``tools/analysis/pseudo_label_quality.py`` is the command line)."""
from typing import Dict, List

import torch

GROUPS = ('right', 'wrong', 'void')


def pseudo_label_groups(target: torch.Tensor,
                        true_label: torch.Tensor,
                        train_label: torch.Tensor,
                        unseen_ids: torch.Tensor,
                        valid: torch.Tensor,
                        ignore_index: int = 255) -> Dict[str, torch.Tensor]:
    """Masks ``[H, W]`` of one image's pixels by what self-training does
    with them.

    Args:
        target: self-training targets (seen labels and pseudo labels).
        true_label: the true labels (unseen classes not ignored).
        train_label: the training labels (unseen classes ignored).
        unseen_ids: the unseen class indices ``[U]``.
        valid: False on padding.

    Returns:
        ``unseen``: unseen-object pixels (the candidates to label right);
        ``right`` / ``wrong``: pseudo-labelled unseen-object pixels with
        the right / a wrong class; ``void``: pseudo-labelled pixels that
        no class labels.
    """
    candidate = (train_label == ignore_index) & valid
    pseudo = candidate & (target != ignore_index)
    unseen = candidate & torch.isin(true_label, unseen_ids)
    void = candidate & (true_label == ignore_index)
    return dict(
        unseen=unseen,
        right=pseudo & unseen & (target == true_label),
        wrong=pseudo & unseen & (target != true_label),
        void=pseudo & void)


def summarise(counts: Dict[str, int],
              weights: Dict[str, List[torch.Tensor]]) -> dict:
    """The report from the summed ``counts`` (``unseen``, ``right``,
    ``wrong``, ``void``) and each group's pseudo-label weights.

    Args:
        counts (dict[str, int]): pixel counts per group.
        weights (dict[str, list[Tensor]]): each group's weights.

    Returns:
        dict: shares, accuracy and weight statistics.
    """
    w = {
        g: torch.cat(weights[g]) if weights[g] else torch.zeros(0)
        for g in GROUPS
    }
    pseudo = sum(counts[g] for g in GROUPS)
    total_w = sum(float(w[g].sum()) for g in GROUPS)
    on_unseen = counts['right'] + counts['wrong']

    def ratio(a, b):
        return a / b if b else float('nan')

    out = dict(
        pseudo_pixels=pseudo,
        share_on_unseen=ratio(on_unseen, pseudo),
        share_on_void=ratio(counts['void'], pseudo),
        accuracy_on_unseen=ratio(counts['right'], on_unseen),
        coverage_of_unseen=ratio(on_unseen, counts['unseen']),
        weighted_share_right=ratio(float(w['right'].sum()), total_w),
        weighted_share_void=ratio(float(w['void'].sum()), total_w),
        weights={})
    for g in GROUPS:
        x = w[g]
        out['weights'][g] = dict(
            pixels=int(x.numel()),
            mean=float(x.mean()) if x.numel() else float('nan'),
            **{
                f'q{q}':
                float(x.quantile(q / 100)) if x.numel() else float('nan')
                for q in (10, 50, 90)
            })
    return out
