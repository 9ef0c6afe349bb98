from .sign_stage_hook import SIGNStageHook
from .strict_checkpoint_hook import (CheckpointMismatchError,
                                     StrictCheckpointHook,
                                     checkpoint_mismatches)
from .torch_rng_state_hook import TorchRNGStateHook

__all__ = [
    'SIGNStageHook', 'StrictCheckpointHook', 'CheckpointMismatchError',
    'checkpoint_mismatches', 'TorchRNGStateHook'
]
