from .sign_stage_hook import SIGNStageHook
from .torch_rng_state_hook import TorchRNGStateHook

__all__ = ['SIGNStageHook', 'TorchRNGStateHook']
