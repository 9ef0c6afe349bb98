from .atomic import atomic_write
from .checkpoint import (UnreadableCheckpointError, UnsafeCheckpointError,
                         checkpoint_safe_globals, load_checkpoint_file,
                         register_checkpoint_safe_globals)
from .dist import use_gloo_without_cuda

__all__ = [
    'atomic_write', 'checkpoint_safe_globals',
    'register_checkpoint_safe_globals', 'use_gloo_without_cuda',
    'load_checkpoint_file', 'UnreadableCheckpointError',
    'UnsafeCheckpointError'
]
