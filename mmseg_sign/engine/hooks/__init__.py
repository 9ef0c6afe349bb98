from .class_split_hook import ClassSplitHook
from .cpu_randomness_hook import CPURandomnessHook
from .dry_run import DryRunHook
from .random_sources_hook import RandomSourcesHook
from .resume_check_hook import ResumeCheckHook
from .self_training_teacher_hook import SelfTrainingTeacherHook
from .strict_checkpoint_hook import (CheckpointMismatchError,
                                     StrictCheckpointHook,
                                     checkpoint_mismatches)
from .torch_rng_state_hook import TorchRNGStateHook
from .work_dir_lock_hook import WorkDirLockHook

__all__ = [
    'ClassSplitHook', 'ResumeCheckHook', 'SelfTrainingTeacherHook',
    'DryRunHook', 'StrictCheckpointHook', 'CheckpointMismatchError',
    'checkpoint_mismatches', 'TorchRNGStateHook', 'WorkDirLockHook',
    'CPURandomnessHook', 'RandomSourcesHook'
]
