from .hooks import SIGNStageHook
from .optimizers import ModuleGroupOptimWrapperConstructor
from .zero_shot_data_parallel import ZeroShotDataParallel

__all__ = [
    'SIGNStageHook', 'ModuleGroupOptimWrapperConstructor',
    'ZeroShotDataParallel'
]
