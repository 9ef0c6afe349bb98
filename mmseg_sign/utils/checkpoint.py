"""Make mmengine 0.10.7 checkpoints loadable under torch >= 2.6.

torch 2.6 made ``torch.load(weights_only=True)`` the default. mmengine's
checkpoints carry the ``MessageHub`` state (``HistoryBuffer`` objects, numpy
arrays and scalars) in ``message_hub``, so ``--resume`` fails with an
``UnpicklingError``. Instead of loading with ``weights_only=False`` (which
would run arbitrary pickled code from any checkpoint), we allow exactly the
classes such checkpoints hold.

mmengine's ``HistoryBuffer`` pickles its statistics methods through
``getattr`` (protocol 2), which a safe unpickler must never allow (it opens
the way to arbitrary calls). :func:`register_checkpoint_safe_globals` also
registers a ``copyreg`` reducer that saves a buffer as its constructor
arguments (numpy arrays), so checkpoints written after ``import mmseg_sign``
need nothing but allow-listed classes.
"""
import copyreg

import numpy as np
import torch


def checkpoint_safe_globals() -> list:
    """The non-tensor classes found in mmengine / mmseg-sign checkpoints."""
    from mmengine.logging import HistoryBuffer
    from mmengine.config import ConfigDict
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
