from .config_guard_runner import ConfigGuardRunner
from .stage_plan_loop import (StagePlanTrainLoop, check_config_run_length,
                              check_run_length)

__all__ = [
    'ConfigGuardRunner', 'StagePlanTrainLoop', 'check_config_run_length',
    'check_run_length'
]
