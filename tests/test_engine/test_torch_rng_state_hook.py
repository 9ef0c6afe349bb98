"""TorchRNGStateHook's restore: a saved generator state goes back to torch
as a CPU byte tensor whatever loading did to it (mmengine's --resume on a
GPU loads it as a CUDA tensor; torch.set_rng_state takes CPU bytes only)."""
import numpy as np
import pytest
import torch

from mmseg_sign.engine.hooks.torch_rng_state_hook import as_rng_state


@pytest.mark.parametrize(
    'convert',
    [
        lambda s: s.to(torch.int64),  # a cast
        lambda s: s.to(torch.int32)[::1],  # another integer dtype
        lambda s: s.numpy(),  # an array
        lambda s: s.tolist(),  # a list
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


@pytest.mark.parametrize(
    'bad',
    [torch.rand(8), torch.tensor([1, 300]),
     np.array([-1, 2])])
def test_not_a_state_is_named(bad):
    with pytest.raises(ValueError, match='not a generator state'):
        as_rng_state(bad, 'CPU RNG state')


class _Resuming:
    """What the hook reads of a Runner on --resume (``runner._resume``)."""
    _resume = True


@pytest.mark.parametrize('damaged, message', [
    ('abc', "not a generator state .*it is str 'abc'"),
    (7, r'not a generator state \(a 1-d byte tensor\): its shape is \(\)'),
    (torch.zeros(100000, dtype=torch.uint8),
     r'CPU RNG state \(100000 bytes\) is not a state of this generator'),
    (torch.get_rng_state()[:10],
     r'CPU RNG state \(10 bytes\) is not a state of this generator'),
    (torch.zeros(0, dtype=torch.uint8), r'its shape is \(0,\)'),
])
def test_damaged_states_are_named_on_resume(damaged, message):
    """A string, an int, a huge or a short tensor as the saved
    state gave torch's raw TypeError / RuntimeError deep in the resume."""
    from mmseg_sign.engine.hooks import TorchRNGStateHook
    before = torch.get_rng_state()
    with pytest.raises(
            ValueError, match=message + '.*delete its '
            '`torch_rng_state` key'):
        TorchRNGStateHook().after_load_checkpoint(
            _Resuming(), dict(torch_rng_state=dict(cpu=damaged)))
    assert torch.equal(torch.get_rng_state(), before)
    with pytest.raises(
            ValueError,
            match="not the dict TorchRNGStateHook "
            "saves .*it is str 'abc'"):
        TorchRNGStateHook().after_load_checkpoint(_Resuming(),
                                                  dict(torch_rng_state='abc'))


def test_a_checkpoint_without_a_state_resumes_with_a_note(capsys):
    """A checkpoint saved without the hook resumed with other
    draws than an uninterrupted run's, and nothing said so."""
    from mmengine.logging import MMLogger

    from mmseg_sign.engine.hooks import TorchRNGStateHook
    MMLogger.get_instance('test_rng_note')  # the current one, on capsys
    before = torch.get_rng_state()
    TorchRNGStateHook().after_load_checkpoint(_Resuming(), {})
    printed = ''.join(capsys.readouterr())
    assert 'holds no torch random state' in printed, printed
    assert torch.equal(torch.get_rng_state(), before)
