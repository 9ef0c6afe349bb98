from .amp import convert_to_amp, enable_amp
from .optim_wrappers import MixedPrecisionOptimWrapper
from .optim_wrappers.gradient_sync import ZeroShotDataParallel
from .optimizers import ModuleGroupOptimWrapperConstructor
from .runner import StagePlanTrainLoop

__all__ = [
    'convert_to_amp', 'enable_amp', 'ModuleGroupOptimWrapperConstructor',
    'MixedPrecisionOptimWrapper', 'ZeroShotDataParallel', 'StagePlanTrainLoop'
]
