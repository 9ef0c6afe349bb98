from .optim_wrappers import MixedPrecisionOptimWrapper
from .optimizers import ModuleGroupOptimWrapperConstructor
from .optim_wrappers.gradient_sync import ZeroShotDataParallel
from .runner import StagePlanTrainLoop

__all__ = [
    'ModuleGroupOptimWrapperConstructor',
    'MixedPrecisionOptimWrapper',
    'ZeroShotDataParallel', 'StagePlanTrainLoop'
]
