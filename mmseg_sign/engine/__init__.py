from .amp import convert_to_amp, enable_amp
from .optim_wrappers import MixedPrecisionOptimWrapper
from .optimizers import ModuleGroupOptimWrapperConstructor
from .optim_wrappers.gradient_sync import ZeroShotDataParallel
from .runner import StagePlanTrainLoop

__all__ = [
    'convert_to_amp', 'enable_amp',
    'ModuleGroupOptimWrapperConstructor',
    'MixedPrecisionOptimWrapper',
    'ZeroShotDataParallel', 'StagePlanTrainLoop'
]
