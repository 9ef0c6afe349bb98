from .stage_plan_loop import (StagePlanTrainLoop, check_config_run_length,
                              check_run_length)

__all__ = ['StagePlanTrainLoop', 'check_config_run_length', 'check_run_length']
