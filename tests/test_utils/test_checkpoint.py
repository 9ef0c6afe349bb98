"""Checkpoints load safely (:mod:`mmseg_sign.utils.checkpoint`): torch's
``weights_only`` default, files written without ``mmseg_sign`` imported
load through every mmengine path, and a refused checkpoint never suggests
``weights_only=False``."""
import argparse
import os
import pickle
import subprocess
import sys
import zipfile

import pytest
import torch
from mmengine.logging import HistoryBuffer

from mmseg_sign.utils.checkpoint import UnsafeCheckpointError


def test_checkpoint_with_message_hub_loads_weights_only(tmp_path):
    """torch >= 2.6 loads with weights_only=True; the mmengine objects in a
    checkpoint must be allowed (and nothing callable like getattr)."""
    from mmengine.logging import MessageHub

    import mmseg_sign  # noqa: F401 (registers the safe globals)
    hub = MessageHub.get_instance('ckpt_test')
    for i in range(3):
        hub.update_scalar('train/loss', 0.5 * i)
    hub.update_info('iter', 3)
    path = tmp_path / 'ckpt.pth'
    torch.save(
        dict(message_hub=hub.state_dict(), state_dict=dict(w=torch.ones(2))),
        path)
    loaded = torch.load(path, weights_only=True)
    buf = loaded['message_hub']['log_scalars']['train/loss']
    assert buf.mean() == pytest.approx(0.5)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(
        str(path)) == []


SYSTEM = f'{os.system.__module__}.system'  # posix.system on Linux


class RunsCommand:
    """Unpickling it runs ``command`` (the payload of a hostile file)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command, )


# -------------------------------------------------------------- checkpoints
WRITE_WITHOUT_MMSEG_SIGN = r'''
import sys
import torch
from mmengine.logging import MessageHub
from mmengine.runner.checkpoint import save_checkpoint
assert 'mmseg_sign' not in sys.modules
hub = MessageHub.get_instance('plain')
for value in (4.0, 2.0, 3.0):
    hub.update_scalar('train/loss', value)
hub.update_info('iter', 3)
model = torch.nn.Linear(3, 2)
torch.manual_seed(0)
torch.nn.init.normal_(model.weight)
save_checkpoint(dict(meta=dict(iter=3), state_dict=model.state_dict(),
                     message_hub=hub.state_dict()), sys.argv[1])
torch.save(model.state_dict(), sys.argv[2])
assert 'mmseg_sign' not in sys.modules
'''


class GetsAttribute:
    """``getattr(HistoryBuffer, 'update')``: not a statistics method."""

    def __reduce__(self):
        return getattr, (HistoryBuffer, 'update')


@pytest.mark.slow
def test_checkpoint_written_without_mmseg_sign_loads_safely(tmp_path):
    """mmengine's ``HistoryBuffer`` pickles ``getattr(HistoryBuffer, 'min')``
    when ``mmseg_sign`` (and its reducer) is not imported; such checkpoints
    load with ``weights_only=True`` through every mmengine path."""
    from mmengine.logging import MessageHub
    from mmengine.runner import load_checkpoint
    from mmengine.runner.checkpoint import CheckpointLoader, _load_checkpoint

    from mmseg_sign.utils.checkpoint import load_from_local

    ckpt, weights = tmp_path / 'plain.pth', tmp_path / 'weights.pth'
    subprocess.run([
        sys.executable, '-c', WRITE_WITHOUT_MMSEG_SIGN,
        str(ckpt),
        str(weights)
    ],
                   check=True,
                   cwd=str(tmp_path))
    with zipfile.ZipFile(ckpt) as archive:
        data_pkl = next(n for n in archive.namelist()
                        if n.endswith('data.pkl'))
        assert b'getattr' in archive.read(data_pkl)  # the case under test

    # the local loader of tools/test.py, --resume, load_from, init_model
    assert CheckpointLoader._get_checkpoint_loader(str(ckpt)) \
        is load_from_local
    for load in (_load_checkpoint, lambda p: torch.load(p, weights_only=True)):
        loaded = load(str(ckpt))
        buffer = loaded['message_hub']['log_scalars']['train/loss']
        assert isinstance(buffer, HistoryBuffer)
        assert buffer.current() == 3.0 and buffer.mean() == 3.0
        assert buffer.min() == 2.0 and buffer.max() == 4.0
    hub = MessageHub.get_instance('resumed_plain_checkpoint')
    hub.load_state_dict(loaded['message_hub'])
    assert hub.get_info('iter') == 3
    assert hub.get_scalar('train/loss').mean() == 3.0

    model = torch.nn.Linear(3, 2)
    load_checkpoint(model, str(ckpt), strict=True)  # as init_model does
    expected = torch.load(str(weights), weights_only=True)
    torch.testing.assert_close(model.weight, expected['weight'])


@pytest.mark.parametrize('payload,refused', [
    ('system', f'{SYSTEM}'),
    ('namespace', 'argparse.Namespace'),
    ('getattr', "'update'"),
])
def test_refused_checkpoint_never_suggests_unsafe_loading(
        tmp_path, payload, refused):
    from mmengine.runner.checkpoint import _load_checkpoint
    sentinel = tmp_path / 'SENTINEL'
    obj = dict(
        system=RunsCommand(f'touch {sentinel}'),
        namespace=argparse.Namespace(lr=0.1),
        getattr=GetsAttribute())[payload]
    path = tmp_path / 'evil.pth'
    torch.save(dict(state_dict={'w': torch.ones(2)}, extra=obj), str(path))
    with pytest.raises(UnsafeCheckpointError) as info:
        _load_checkpoint(str(path))
    assert isinstance(info.value, pickle.UnpicklingError)
    message = str(info.value)
    assert message.startswith(f'Cannot load the checkpoint {path} safely')
    assert refused in message, message
    assert 'weights_only=False' not in message
    assert 'add_safe_globals' not in message
    assert 'state_dict' in message  # the safe fix
    assert info.value.__cause__ is None  # torch's advice is not chained
    assert not sentinel.exists()
