"""Make mmengine 0.10.7 checkpoints loadable under torch >= 2.6.

torch 2.6 made ``torch.load(weights_only=True)`` the default. mmengine's
checkpoints carry the ``MessageHub`` state (``HistoryBuffer`` objects, numpy
arrays and scalars) in ``message_hub``, so ``--resume`` fails with an
``UnpicklingError``. Instead of loading with ``weights_only=False`` (which
would run arbitrary pickled code from any checkpoint), we allow exactly the
classes such checkpoints hold.

mmengine's ``HistoryBuffer`` pickles its statistics methods through
``getattr`` (protocol 2), which a safe unpickler must never allow as such
(it opens the way to arbitrary calls).
:func:`register_checkpoint_safe_globals` also registers a ``copyreg``
reducer that saves a buffer as its constructor arguments (numpy arrays), so
checkpoints written after ``import mmseg_sign`` need nothing but
allow-listed classes. Checkpoints written *without*
``mmseg_sign`` imported (plain mmengine, or older mmseg_sign) still hold
``getattr(HistoryBuffer, 'min')`` and the like: ``builtins.getattr`` is
allow-listed as :func:`_history_buffer_method`, which returns those four
statistics methods of ``HistoryBuffer`` and refuses every other call.

mmengine reads local checkpoints (``tools/test.py``, ``--resume``,
``load_from``, ``init_model``) with :func:`load_from_local`, registered in
place of mmengine's: it asks for ``weights_only=True`` explicitly (torch >=
2.4) and replaces torch's error, which suggests ``weights_only=False``,
with one that names the file and the safe fix.
"""
import copyreg
import os.path as osp
import pickle
import pickletools
import re
import zipfile
from typing import List, Optional

import numpy as np
import torch

# The statistics methods HistoryBuffer.__getstate__ puts in every pickle.
_HISTORY_BUFFER_METHODS = ('min', 'max', 'current', 'mean')


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint holds something outside the safe allow-list."""


class UnreadableCheckpointError(ValueError):
    """A checkpoint file is empty, truncated or not a torch checkpoint."""


def checkpoint_safe_globals() -> list:
    """The non-tensor classes found in mmengine / mmseg-sign checkpoints."""
    from mmengine.config import ConfigDict
    from mmengine.logging import HistoryBuffer
    globals_ = [HistoryBuffer, ConfigDict, np.dtype, np.ndarray]
    # numpy >= 1.25 names the array reconstructor `numpy._core` (2.x) or
    # `numpy.core` (1.x); dtype classes live in `numpy.dtypes`
    for module_name in ('numpy._core.multiarray', 'numpy.core.multiarray'):
        try:
            module = __import__(module_name, fromlist=['_reconstruct'])
        except ImportError:
            continue
        globals_ += [module._reconstruct, module.scalar]
        break
    dtypes = getattr(np, 'dtypes', None)
    if dtypes is not None:
        globals_ += [
            getattr(dtypes, name) for name in dir(dtypes)
            if name.endswith('DType')
        ]
    return globals_


def _history_buffer_method(owner, name):
    """``getattr`` as mmengine checkpoints use it, and nothing more.

    ``HistoryBuffer`` pickles (without the reducer below) hold
    ``getattr(HistoryBuffer, 'min')`` for its statistics methods; any other
    ``getattr`` in a checkpoint is refused.
    """
    from mmengine.logging import HistoryBuffer
    if owner is HistoryBuffer and name in _HISTORY_BUFFER_METHODS:
        return getattr(HistoryBuffer, name)
    raise UnsafeCheckpointError(
        f'refusing getattr({owner!r}, {name!r}) in a checkpoint: only '
        f'HistoryBuffer.{"/".join(_HISTORY_BUFFER_METHODS)} are allowed')


def _reduce_history_buffer(buffer):
    return type(buffer), (buffer._log_history, buffer._count_history,
                          buffer.max_length)


def register_checkpoint_safe_globals() -> None:
    """Allow the classes of :func:`checkpoint_safe_globals` in
    ``torch.load(weights_only=True)`` (no-op on torch < 2.4), and pickle
    ``HistoryBuffer`` without functions."""
    from mmengine.logging import HistoryBuffer
    copyreg.pickle(HistoryBuffer, _reduce_history_buffer)
    add_safe_globals = getattr(torch.serialization, 'add_safe_globals', None)
    if add_safe_globals is not None:
        add_safe_globals(checkpoint_safe_globals())
        if _supports_named_safe_globals():
            add_safe_globals([(_history_buffer_method, 'builtins.getattr')])
    _register_safe_local_loader()


def _supports_named_safe_globals() -> bool:
    """Whether torch takes ``(object, 'module.name')`` safe globals (newer
    torch; older ones fail on them at load time, so probe first)."""
    probe = (_history_buffer_method, 'mmseg_sign.probe')
    try:
        from torch import _weights_only_unpickler
        with torch.serialization.safe_globals([probe]):
            found = _weights_only_unpickler._get_user_allowed_globals()
        return found.get('mmseg_sign.probe') is _history_buffer_method
    except (ImportError, AttributeError, TypeError, ValueError):
        return False  # an older torch: no named safe globals (documented)


def _safe_reason(message: str) -> str:
    """torch's reason for refusing a pickle, without its advice to load with
    ``weights_only=False`` or to allow-list the global."""
    reasons = []
    for line in message.splitlines():
        line = re.sub(r'.*WeightsUnpickler error:', '', line)
        line = re.split(r'\s*Please (?:use|file)\b', line)[0].strip()
        if line and not re.search(
                r'weights_only|Weights only|Check the documentation|'
                r'safe_globals|trust', line):
            reasons.append(line.rstrip('.'))
    return '; '.join(reasons) or 'a global outside the allow-list'


def _plain_pickle_globals(filename: str) -> Optional[List[str]]:
    """The globals (``module.name``) a plain, non-zip pickle file would
    import, read with ``pickletools`` without running anything; ``None``
    if the file does not parse to its end (cut short, or not a pickle)."""
    names, strings = [], []
    try:
        with open(filename, 'rb') as f:
            for op, arg, _ in pickletools.genops(f):
                if op.name == 'GLOBAL':
                    names.append(arg.replace(' ', '.'))
                elif 'UNICODE' in op.name or op.name.endswith('STRING'):
                    strings.append(str(arg))
                elif op.name == 'STACK_GLOBAL' and len(strings) >= 2:
                    names.append('.'.join(strings[-2:]))
    except ValueError:  # truncated, or an unknown opcode
        return None
    return names


def _unreadable(filename: str,
                err: BaseException) -> UnreadableCheckpointError:
    """The error for a checkpoint file torch cannot parse."""
    try:
        size = osp.getsize(filename)
    except OSError:
        size = -1
    if size == 0:
        what = 'it is empty (0 bytes)'
    else:
        what = (f'it is truncated, damaged or not a torch checkpoint '
                f'({size} bytes; {type(err).__name__}: '
                f'{str(err).strip() or "no details"})')
    return UnreadableCheckpointError(
        f'Cannot read the checkpoint {filename}: {what}. A run killed while '
        'saving leaves such a file only under a temporary name, so it was '
        'probably cut short by a copy or download: copy it again, or use '
        'an earlier checkpoint of the run (iter_*.pth in its work dir).')


def load_checkpoint_file(filename, map_location='cpu'):
    """The one loader of every checkpoint the project reads (mmengine's
    ``load_from`` / ``--resume`` / ``init_model`` through
    :func:`load_from_local`, and ``tools/publish_model.py``).

    Loads with ``torch.load(weights_only=True)`` (given explicitly where
    torch has ``add_safe_globals``, i.e. >= 2.4). Raises
    ``FileNotFoundError``, :class:`UnsafeCheckpointError` (torch refused a
    global: the file, what was refused and the safe fix, never torch's
    advice to pass ``weights_only=False``) or
    :class:`UnreadableCheckpointError` (an empty, truncated or foreign
    file), each naming the file.

    Args:
        filename (str): the checkpoint file.
        map_location: as ``torch.load``'s.

    Returns:
        dict: the checkpoint.
    """
    filename = osp.expanduser(filename)
    if not osp.isfile(filename):
        what = 'is a directory' if osp.isdir(filename) else 'can not be found'
        raise FileNotFoundError(f'{filename} {what}.')
    kwargs = {}
    if hasattr(torch.serialization, 'add_safe_globals'):
        kwargs['weights_only'] = True
    try:
        return torch.load(filename, map_location=map_location, **kwargs)
    except pickle.UnpicklingError as err:
        if 'Weights only' not in str(err) and \
                'weights_only' not in str(err):
            raise _unreadable(filename, err) from None  # not a pickle
        reason = _safe_reason(str(err))
        if re.search(
                r'EOFError|Ran out of input|truncated|'
                r'Unsupported operand', str(err)):
            # cut short, or a plain pickle (torch writes zip files): one
            # that imports globals is refused as unsafe, not as damaged
            imports = _plain_pickle_globals(filename)
            if not imports:
                raise _unreadable(filename, err) from None
            reason = ('a plain pickle (not a torch zip checkpoint) that '
                      f'imports {", ".join(dict.fromkeys(imports))}')
        raise UnsafeCheckpointError(
            f'Cannot load the checkpoint {filename} safely: '
            f'{reason}. Checkpoints are loaded with '
            'torch.load(weights_only=True), which allows tensors, numbers, '
            'strings, containers and what mmengine / mmseg_sign '
            'checkpoints hold (numpy arrays, HistoryBuffer, ConfigDict); '
            'this file holds something else, so it was not written by '
            'mmengine / mmseg_sign or was modified. Do not allow-list that '
            'global. If you trust the file, re-save only its weights from '
            'the code that wrote it, e.g. torch.save({"state_dict": '
            'model.state_dict()}, PATH), and load that.') from None
    except RuntimeError as err:
        if re.search(r'device|CUDA|cuda', str(err)):
            raise  # map_location, not the file
        raise _unreadable(filename, err) from None  # zip / magic number
    except (EOFError, KeyError, IndexError, zipfile.BadZipFile,
            ValueError) as err:  # a cut-short or foreign file
        raise _unreadable(filename, err) from None


def load_from_local(filename, map_location):
    """mmengine's local checkpoint loader, always safe: the project's one
    loader, :func:`load_checkpoint_file`.

    Args:
        filename (str): the checkpoint file.
        map_location: as ``torch.load``'s.

    Returns:
        dict: the checkpoint.
    """
    return load_checkpoint_file(filename, map_location)


def _register_safe_local_loader() -> None:
    """Put :func:`load_from_local` in mmengine's ``CheckpointLoader`` for
    local paths (its log line names the backend from the function name)."""
    from mmengine.runner.checkpoint import CheckpointLoader
    CheckpointLoader.register_scheme(
        prefixes='', loader=load_from_local, force=True)
