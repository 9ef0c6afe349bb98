"""How much a GZSL score owes to which images were scored: the spread of
seen / unseen / harmonic mIoU over bootstrap resamples of the test images
(``GZSLIoUMetric(bootstrap=B)``; docs/toy_results.md, the spread
decomposition)."""
import warnings

import numpy as np


def bootstrap_gzsl(intersect: np.ndarray,
                   union: np.ndarray,
                   unseen: np.ndarray,
                   resamples: int = 1000,
                   seed: int = 0) -> dict:
    """The sd (ddof 1) of ``mIoU_seen``, ``mIoU_unseen`` and ``hIoU`` (in
    percent) over ``resamples`` resamples of the N images with replacement.

    Each resample sums the images' per-class intersection and union counts
    (as the metric sums them over the whole set), then takes the per-class
    IoU, the nan-means over seen and unseen classes and their harmonic
    mean ``2·S·U / (S + U)`` (the paper's eq. for hIoU). A private
    generator of ``seed`` draws the resamples: the model's random stream is
    not touched, and the same counts give the same answer.

    Args:
        intersect (np.ndarray): ``[N, K]`` per-image intersection counts.
        union (np.ndarray): ``[N, K]`` per-image union counts.
        unseen (np.ndarray): ``[K]`` bool, True for unseen classes.
        resamples (int): how many resamples (>= 2).
        seed (int): the resampling generator's seed.

    Returns:
        dict: ``{'mIoU_seen_boot_sd', 'mIoU_unseen_boot_sd',
        'hIoU_boot_sd'}``, floats in percent.
    """
    intersect = np.asarray(intersect, dtype=np.float64)
    union = np.asarray(union, dtype=np.float64)
    unseen = np.asarray(unseen, dtype=bool)
    if intersect.ndim != 2 or intersect.shape != union.shape or \
            unseen.shape != (intersect.shape[1], ):
        raise ValueError(
            f'bootstrap_gzsl: intersect {intersect.shape} and union '
            f'{union.shape} must both be [N images, K classes] and unseen '
            f'{unseen.shape} [K].')
    if resamples < 2:
        raise ValueError(f'bootstrap_gzsl: resamples must be >= 2, got '
                         f'{resamples}.')
    n = intersect.shape[0]
    rng = np.random.default_rng(seed)
    # how often each image is drawn in each resample: [B, N]
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)
    inter_b, union_b = weights @ intersect, weights @ union  # [B, K]
    with np.errstate(divide='ignore', invalid='ignore'):
        iou = inter_b / union_b  # nan: a class absent from the resample
    with np.errstate(all='ignore'), warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)  # all-nan rows
        seen = np.nanmean(iou[:, ~unseen], axis=1) * 100
        uns = np.nanmean(iou[:, unseen], axis=1) * 100
        total = seen + uns
        h = np.where(total == 0, 0.0, 2 * seen * uns / total)
    return {
        f'{name}_boot_sd': float(np.round(np.nanstd(x, ddof=1), 2))
        for name, x in (('mIoU_seen', seen), ('mIoU_unseen', uns), ('hIoU', h))
    }
