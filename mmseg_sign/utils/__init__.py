from .amp import convert_to_amp, enable_amp
from .dist import use_gloo_without_cuda
from .checkpoint import (checkpoint_safe_globals,
                         register_checkpoint_safe_globals)

__all__ = [
    'enable_amp', 'convert_to_amp', 'checkpoint_safe_globals',
    'register_checkpoint_safe_globals', 'use_gloo_without_cuda'
]
