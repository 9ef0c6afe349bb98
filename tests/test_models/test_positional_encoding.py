"""Positional encodings against eq. 10-15 written out by hand."""
import math

import pytest
import torch

from mmseg_sign.models.utils import positional_encoding_2d


def hand_pe(pos, channel, d_model):
    """PE(p, 2d) = sin(p / 10000^(2d/d_model)), PE(p, 2d+1) = cos(...)."""
    d = channel // 2
    angle = pos / 10000**(2 * d / d_model)
    return math.sin(angle) if channel % 2 == 0 else math.cos(angle)


def test_relative_pe_values_by_hand():
    h, w, ch = 4, 8, 8  # d_model = 4 per direction
    pe = positional_encoding_2d(h, w, ch, 'relative', scale=512.0)
    assert pe.shape == (8, 4, 8)
    v, u = 1, 3
    pos_u, pos_v = 512 * u / w, 512 * v / h  # 192, 128
    for c in range(4):
        assert pe[c, v, u].item() == pytest.approx(
            hand_pe(pos_u, c, 4), abs=1e-6)
        assert pe[4 + c, v, u].item() == pytest.approx(
            hand_pe(pos_v, c, 4), abs=1e-6)
    # e.g. channel 2: sin(192 / 10000^(2/4)) = sin(1.92)
    assert pe[2, v, u].item() == pytest.approx(math.sin(1.92), abs=1e-6)


def test_relative_pe_is_size_invariant_at_same_relative_position():
    small = positional_encoding_2d(4, 8, 600, 'relative')
    large = positional_encoding_2d(8, 16, 600, 'relative')
    torch.testing.assert_close(small[:, 1, 2], large[:, 2, 4])
    torch.testing.assert_close(small[:, 3, 7], large[:, 6, 14])
    # the absolute encoding is not
    a_small = positional_encoding_2d(4, 8, 600, 'absolute')
    a_large = positional_encoding_2d(8, 16, 600, 'absolute')
    assert not torch.allclose(a_small[:, 1, 2], a_large[:, 2, 4])


def test_absolute_and_interp():
    pe = positional_encoding_2d(3, 5, 8, 'absolute')
    assert pe[1, 2, 4].item() == pytest.approx(math.cos(4.0), abs=1e-6)
    assert pe[4, 2, 4].item() == pytest.approx(math.sin(2.0), abs=1e-6)
    same = positional_encoding_2d(
        3, 5, 8, 'absolute_interp', train_size=(3, 5))
    torch.testing.assert_close(same, pe)
    bigger = positional_encoding_2d(
        6, 10, 8, 'absolute_interp', train_size=(3, 5))
    assert bigger.shape == (8, 6, 10)
    none = positional_encoding_2d(3, 5, 8, 'none')
    assert not none.any()


def test_pe_errors():
    with pytest.raises(ValueError, match='pe_type must be one of'):
        positional_encoding_2d(2, 2, 8, 'learned')
    with pytest.raises(ValueError, match='multiple of 4'):
        positional_encoding_2d(2, 2, 6)
    with pytest.raises(ValueError, match='train_size'):
        positional_encoding_2d(2, 2, 8, 'absolute_interp')
