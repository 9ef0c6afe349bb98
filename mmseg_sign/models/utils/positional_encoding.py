"""2-D sinusoidal positional encodings of the SIM (paper eq. 10-15)."""
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

PE_TYPES = ('relative', 'absolute', 'absolute_interp', 'none')


def sinusoid_1d(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """``[d_model, L]``: ``PE(p, 2d) = sin(p / 10000^(2d/d_model))`` and
    ``PE(p, 2d+1) = cos(...)`` (eq. 10-13) for positions ``[L]``.

    Args:
        positions (Tensor): positions ``[L]`` (float).
        d_model (int): the encoding's width (even).

    Returns:
        Tensor: ``[d_model, L]``.
    """
    d = torch.arange(
        d_model // 2, dtype=torch.float64, device=positions.device)
    freq = 10000.0**(-2 * d / d_model)  # [d_model / 2]
    angle = freq[:, None] * positions.double()[None, :]
    pe = torch.stack([angle.sin(), angle.cos()], dim=1)  # [d/2, 2, L]
    return pe.reshape(d_model, -1).float()


def positional_encoding_2d(height: int,
                           width: int,
                           channels: int = 600,
                           pe_type: str = 'relative',
                           scale: float = 512.0,
                           train_size: Optional[Sequence[int]] = None,
                           device=None) -> torch.Tensor:
    """Positional encoding ``[channels, height, width]``.

    The first half of the channels encodes the horizontal position ``u``,
    the second half the vertical position ``v``; each half is the sinusoid
    of eq. 10-13 with ``d_model = channels / 2``.

    Args:
        pe_type: ``'relative'`` uses ``u* = scale·u/W``, ``v* = scale·v/H``
            (eq. 14-15, RPE); ``'absolute'`` the pixel index; ``'absolute_
            interp'`` the absolute table of ``train_size`` (H, W) resized
            bilinearly to ``height × width``; ``'none'`` all zeros.
    """
    if pe_type not in PE_TYPES:
        raise ValueError(f'pe_type must be one of {PE_TYPES}, got '
                         f'{pe_type!r}.')
    if channels % 4:
        raise ValueError('positional encoding channels must be a multiple '
                         f'of 4 (sin/cos pairs per direction), got '
                         f'{channels}.')
    if pe_type == 'none':
        return torch.zeros(channels, height, width, device=device)
    if pe_type == 'absolute_interp':
        if train_size is None:
            raise ValueError("pe_type='absolute_interp' needs `train_size` "
                             '(the feature-map size seen in training).')
        table = positional_encoding_2d(
            *train_size, channels, 'absolute', device=device)
        return F.interpolate(
            table[None],
            size=(height, width),
            mode='bilinear',
            align_corners=False)[0]
    d_model = channels // 2
    u = torch.arange(width, dtype=torch.float64, device=device)
    v = torch.arange(height, dtype=torch.float64, device=device)
    if pe_type == 'relative':
        u, v = scale * u / width, scale * v / height
    pe_u = sinusoid_1d(u, d_model)[:, None, :].expand(-1, height, -1)
    pe_v = sinusoid_1d(v, d_model)[:, :, None].expand(-1, -1, width)
    return torch.cat([pe_u, pe_v], dim=0).contiguous()
