from .stage_plan_loop import StagePlanTrainLoop, check_run_length

__all__ = ['StagePlanTrainLoop', 'check_run_length']
