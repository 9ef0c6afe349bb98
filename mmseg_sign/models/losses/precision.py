"""Ops that run in float32 under mixed precision (``--amp``)."""
import functools

import torch

HALF_DTYPES = (torch.float16, torch.bfloat16)


def _float32(value):
    if isinstance(value, torch.Tensor) and value.dtype in HALF_DTYPES:
        return value.float()
    return value  # float32 / float64 as they are


def float32_op(fn):
    """Run ``fn`` in (at least) float32 whatever autocast is active: its
    float16 / bfloat16 tensor arguments are cast to float32 and autocast is
    disabled inside (a no-op on float32 / float64 inputs outside autocast,
    so fp32 training is unchanged bit for bit). For the terms that cancel,
    underflow or overflow in float16 / bfloat16; each use says why.

    Args:
        fn (Callable): a function of tensors.

    Returns:
        Callable: ``fn`` run in float32.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        device = next((a.device.type for a in (*args, *kwargs.values())
                       if isinstance(a, torch.Tensor)), 'cpu')
        with torch.autocast(device, enabled=False):
            return fn(*[_float32(a) for a in args],
                      **{k: _float32(v)
                         for k, v in kwargs.items()})

    return wrapper
