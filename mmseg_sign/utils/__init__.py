from .amp import enable_amp
from .dist import use_gloo_without_cuda
from .checkpoint import (checkpoint_safe_globals,
                         register_checkpoint_safe_globals)

__all__ = [
    'enable_amp', 'checkpoint_safe_globals',
    'register_checkpoint_safe_globals', 'use_gloo_without_cuda'
]
