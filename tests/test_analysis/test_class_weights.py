"""ENet class weights (Paszke et al. 2016): 1 / ln(1.02 + p), mean 1."""
import math

import numpy as np
import pytest

from mmseg_sign.analysis.class_weights import enet_class_weights


def test_hand_worked():
    # equal shares: equal weights
    np.testing.assert_allclose(enet_class_weights([5, 5]), [1.0, 1.0])
    # shares 3/4 and 1/4: 1/ln(1.77) = 1.7525, 1/ln(1.27) = 4.1846; their
    # mean 2.9686
    a, b = 1 / math.log(1.77), 1 / math.log(1.27)
    got = enet_class_weights([300, 100])
    np.testing.assert_allclose(got, [2 * a / (a + b), 2 * b / (a + b)])
    assert got.mean() == pytest.approx(1.0)
    # a class without pixels gets the bound 1 / ln(1.02)
    got = enet_class_weights([1, 0], c=1.02)
    ratio = (1 / math.log(1.02)) / (1 / math.log(2.02))
    assert got[1] / got[0] == pytest.approx(ratio)


def test_refuses_no_pixels():
    with pytest.raises(ValueError, match='no labelled pixel'):
        enet_class_weights([0, 0, 0])
