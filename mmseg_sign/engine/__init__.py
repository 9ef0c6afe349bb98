from .hooks import SIGNStageHook
from .optim_wrappers import MixedPrecisionOptimWrapper
from .optimizers import ModuleGroupOptimWrapperConstructor
from .zero_shot_data_parallel import ZeroShotDataParallel

__all__ = [
    'SIGNStageHook', 'ModuleGroupOptimWrapperConstructor',
    'MixedPrecisionOptimWrapper',
    'ZeroShotDataParallel'
]
