"""TorchRNGStateHook's restore: a saved generator state goes back to torch
as a CPU byte tensor whatever loading did to it (mmengine's --resume on a
GPU loads it as a CUDA tensor; torch.set_rng_state takes CPU bytes only)."""
import numpy as np
import pytest
import torch

from mmseg_sign.engine.hooks.torch_rng_state_hook import as_rng_state


@pytest.mark.parametrize('convert', [
    lambda s: s.to(torch.int64),             # a cast
    lambda s: s.to(torch.int32)[::1],        # another integer dtype
    lambda s: s.numpy(),                     # an array
    lambda s: s.tolist(),                    # a list
    lambda s: torch.stack([s, s], 1)[:, 0],  # non-contiguous bytes
])
def test_moved_state_restores_the_stream(convert):
    torch.manual_seed(3)
    saved = torch.get_rng_state()
    want = torch.rand(5)
    moved = convert(saved.clone())
    if isinstance(moved, torch.Tensor) and moved.dtype != torch.uint8:
        with pytest.raises(TypeError, match='ByteTensor'):
            torch.set_rng_state(moved)  # what the hook did before
    torch.manual_seed(0)
    state = as_rng_state(moved)
    assert state.dtype == torch.uint8 and state.device.type == 'cpu'
    assert state.is_contiguous() and torch.equal(state, saved)
    torch.set_rng_state(state)
    assert torch.equal(torch.rand(5), want)


@pytest.mark.parametrize('bad', [torch.rand(8), torch.tensor([1, 300]),
                                 np.array([-1, 2])])
def test_not_a_state_is_named(bad):
    with pytest.raises(ValueError, match='not a generator state'):
        as_rng_state(bad, 'CPU RNG state')
