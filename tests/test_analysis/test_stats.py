"""mmseg_sign/analysis/stats.py: a toy number's 95 % confidence interval, the
paired difference of two settings, seed ranges; checked against values
worked by hand from a printed t table."""
import math

import pytest

from mmseg_sign.analysis.stats import mean_ci, paired_difference, parse_seeds


def test_mean_ci_by_hand():
    # 1, 2, 3: mean 2, sd 1 (ddof 1); t(0.975, 2 df) = 4.303 (t table)
    ci = mean_ci([1.0, 2.0, 3.0])
    assert ci.n == 3 and ci.mean == 2.0 and ci.sd == pytest.approx(1.0)
    assert ci.half == pytest.approx(4.303 / math.sqrt(3), abs=1e-3)
    assert str(ci) == '2.00 ± 2.48'
    # ten values 0..9: mean 4.5, sd 3.0277; t(0.975, 9 df) = 2.262
    ci = mean_ci(list(range(10)))
    assert ci.half == pytest.approx(2.262 * 3.0277 / math.sqrt(10), abs=2e-3)
    # a 90 % interval is narrower: t(0.95, 9 df) = 1.833
    assert mean_ci(list(range(10)), 0.90).half == pytest.approx(
        1.833 * 3.0277 / math.sqrt(10), abs=2e-3)


def test_one_value_has_no_interval():
    ci = mean_ci([61.5])
    assert ci.n == 1 and math.isnan(ci.half) and str(ci) == '61.50'
    with pytest.raises(ValueError, match='non-empty'):
        mean_ci([])


def test_paired_difference_cancels_the_seeds_luck():
    # B = A - 1 on every seed, seeds far apart: unpaired, the two means
    # overlap widely; paired, the difference is exactly 1 with no spread
    a = [40.0, 70.0, 55.0, 62.0]
    b = [x - 1.0 for x in a]
    p = paired_difference(a, b)
    assert p.diff.mean == pytest.approx(1.0) and p.diff.half == \
        pytest.approx(0.0) and p.wins == 4
    assert p.verdict == 'A > B'
    assert mean_ci(a).half > 10  # the unpaired interval could not tell
    # differences 1, -1, 2, -2: mean 0 -> not resolved
    p = paired_difference([1, 2, 3, 4], [0, 3, 1, 6])
    assert p.diff.mean == 0 and p.wins == 2 and p.verdict == 'not resolved'
    # differences -3, -2, -4: mean -3, sd 1, t(2 df) 4.303 -> half 2.48
    p = paired_difference([0, 0, 0], [3, 2, 4])
    assert p.diff.half == pytest.approx(4.303 / math.sqrt(3), abs=1e-3)
    assert p.verdict == 'A < B'
    assert paired_difference([5.0], [1.0]).verdict == 'not resolved'
    with pytest.raises(ValueError, match='length'):
        paired_difference([1, 2], [1])


@pytest.mark.parametrize('text,seeds', [('0-9', list(range(10))), ('3', [3]),
                                        ('0-2,7', [0, 1, 2, 7]), ('5-5', [5])])
def test_parse_seeds(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize('text', ['a', '9-0', '-1', '1-', '0-x'])
def test_parse_seeds_refuses(text):
    with pytest.raises(ValueError, match='seed|range'):
        parse_seeds(text)
