"""Random draws pinned to a CPU generator and moved to the caller's device:
the parity harness's fixed draws (``mmseg_sign/analysis/parity.py``) and
``CPURandomnessHook``'s CPU-drawn GPU runs (docs/gpu.md)."""
import contextlib
from typing import Iterator, Optional

import torch
import torch.nn.functional as F


@contextlib.contextmanager
def pinned_randomness(
        seed: Optional[int] = None,
        draw_dtype: Optional[torch.dtype] = torch.float64) -> Iterator[None]:
    """Every random draw SIGN's training makes, drawn from a CPU generator
    (in call order) and moved to the caller's device and dtype:
    ``torch.randn_like`` (the SIM's ``z``), ``torch.randn`` (transfer's
    ``z ~ N(0, I)``), ``torch.randperm`` (MMD pixel samples),
    ``torch.multinomial`` (transfer's sampled labels) and ``F.dropout``
    (the mask drawn here, then ``x · mask / (1 − p)``). Two devices that
    call them in the same order get the same numbers.

    Args:
        seed (int, optional): a private generator's seed; None: torch's
            global CPU generator.
        draw_dtype (torch.dtype, optional): draw normals and dropout masks
            in this dtype, then cast (float64: the same numbers for every
            dtype, the parity harness); None: in the caller's dtype, which
            on a CPU draws exactly what the unpatched functions draw
            (``CPURandomnessHook``).
    """
    gen = torch.default_generator if seed is None else \
        torch.Generator().manual_seed(seed)
    saved = dict(
        randn_like=torch.randn_like,
        randn=torch.randn,
        randperm=torch.randperm,
        multinomial=torch.multinomial,
        dropout=F.dropout)
    orig_randn, orig_randperm = saved['randn'], saved['randperm']
    orig_multinomial = saved['multinomial']

    def normal(shape, device, dtype):
        dtype = dtype or torch.get_default_dtype()
        return orig_randn(
            *shape, generator=gen, dtype=draw_dtype or dtype).to(
                device=device, dtype=dtype)

    def own(fn, name):
        """``fn`` for draws from torch's generators; a call that passes
        its own ``generator`` (a sampler's) goes to torch's function."""

        def call(*args, **kwargs):
            if kwargs.get('generator') is not None:
                return saved[name](*args, **kwargs)
            kwargs.pop('generator', None)
            return fn(*args, **kwargs)

        return call

    def randn_like(t, *, dtype=None, device=None, **kwargs):
        return normal(t.shape, device or t.device, dtype or t.dtype)

    def randn(*size, device=None, dtype=None, **kwargs):
        if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
            size = tuple(size[0])
        return normal(size, device, dtype)

    def randperm(n, *, device=None, dtype=torch.int64, **kwargs):
        return orig_randperm(n, generator=gen, dtype=dtype).to(device)

    def multinomial(probs, num_samples, replacement=False, **kwargs):
        device = probs.device
        probs = probs.detach().cpu()
        if draw_dtype is not None:
            probs = probs.to(draw_dtype)
        return orig_multinomial(
            probs, num_samples, replacement, generator=gen).to(device)

    def dropout(x, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            return x
        # as ATen's CPU dropout: empty_like(x).bernoulli_(1 - p) / (1 - p)
        keep = torch.empty(
            x.shape, dtype=draw_dtype or x.dtype).bernoulli_(
                1 - p, generator=gen).div_(1 - p)
        return x * keep.to(x.device, x.dtype)

    torch.randn_like = own(randn_like, 'randn_like')
    torch.randn, torch.randperm = own(randn,
                                      'randn'), own(randperm, 'randperm')
    torch.multinomial = own(multinomial, 'multinomial')
    F.dropout = dropout
    try:
        yield
    finally:
        torch.randn_like, torch.randn = saved['randn_like'], saved['randn']
        torch.randperm, torch.multinomial = saved['randperm'], \
            saved['multinomial']
        F.dropout = saved['dropout']
