"""A toy number with its uncertainty: the mean of n runs with its 95 %
confidence interval (Student's t), and the paired difference of two
settings run on the same seeds (docs/toy_results.md, "Protocol")."""
import math
from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats as _stats


class MeanCI(NamedTuple):
    """``mean ± half`` is the 95 % confidence interval of the mean of ``n``
    values (``half`` is nan for n < 2); ``sd`` the sample standard
    deviation (ddof 1)."""
    mean: float
    half: float
    sd: float
    n: int

    def __str__(self) -> str:
        if self.n < 2:
            return f'{self.mean:.2f}'
        return f'{self.mean:.2f} ± {self.half:.2f}'


def mean_ci(values: Sequence[float], level: float = 0.95) -> MeanCI:
    """The mean of ``values`` and the half-width of its ``level`` confidence
    interval, ``t(1 − (1 − level) / 2, n − 1) · sd / √n``.

    Args:
        values (Sequence[float]): n runs' values (n >= 1).
        level (float): the interval's coverage.

    Returns:
        MeanCI: mean, half-width, sd (ddof 1) and n.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or not x.size:
        raise ValueError(f'mean_ci needs a non-empty list of numbers, got '
                         f'{values!r}.')
    n = int(x.size)
    if n < 2:
        return MeanCI(float(x[0]), math.nan, math.nan, 1)
    sd = float(x.std(ddof=1))
    t = float(_stats.t.ppf(1 - (1 - level) / 2, n - 1))
    return MeanCI(float(x.mean()), t * sd / math.sqrt(n), sd, n)


class PairedDifference(NamedTuple):
    """``A − B`` over runs paired by (data seed, training seed)."""
    diff: MeanCI
    wins: int  # pairs where A > B

    @property
    def verdict(self) -> str:
        """``'A > B'``, ``'A < B'`` where the 95 % interval excludes 0,
        else ``'not resolved'`` (also with fewer than 2 pairs)."""
        d = self.diff
        if d.n < 2 or abs(d.mean) <= d.half:
            return 'not resolved'
        return 'A > B' if d.mean > 0 else 'A < B'


def paired_difference(a: Sequence[float],
                      b: Sequence[float],
                      level: float = 0.95) -> PairedDifference:
    """The mean of ``a[i] − b[i]`` with its confidence interval (a paired
    t interval: the two settings ran on the same seeds, so a seed's own
    luck cancels).

    Args:
        a (Sequence[float]): setting A, one value per pair.
        b (Sequence[float]): setting B, the same pairs in the same order.
        level (float): the interval's coverage.

    Returns:
        PairedDifference: the difference's :class:`MeanCI` and how many
        pairs A won.
    """
    if len(a) != len(b):
        raise ValueError(f'paired values differ in length: {len(a)} vs '
                         f'{len(b)}.')
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    return PairedDifference(mean_ci(d, level), int((d > 0).sum()))


def parse_seeds(text: str) -> list:
    """Seeds as written on a command line: ``'0-9'``, ``'3'``, ``'0-2,7'``.

    Args:
        text (str): one item of ``--seeds``.

    Returns:
        list[int]: the seeds, in order.

    Raises:
        ValueError: not a seed or range of seeds >= 0.
    """
    seeds = []
    for part in text.split(','):
        lo, dash, hi = part.strip().partition('-')
        try:
            first, last = int(lo), int(hi if dash else lo)
        except ValueError:
            raise ValueError(
                f'{text!r} is not a seed or a range of seeds (write e.g. '
                '0-9, 4 or 0-2,7)') from None
        if first < 0 or last < first:
            raise ValueError(f'{part!r}: write a range as LOW-HIGH with 0 <= '
                             'LOW <= HIGH (e.g. 0-9)')
        seeds += range(first, last + 1)
    return seeds
