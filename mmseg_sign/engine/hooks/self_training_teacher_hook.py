"""SelfTrainingTeacherHook: the frozen teacher of self-training (paper
section 3.4) is saved with every checkpoint and restored by ``--resume``,
so a resumed run labels with the same teacher (as mmengine's ``EMAHook``
keeps its averaged model)."""
from mmengine.hooks import Hook

from mmseg.registry import HOOKS
from ..runner.runner_state import is_resuming, is_training, unwrap_model

CHECKPOINT_KEY = 'sign_teacher'


@HOOKS.register_module()
class SelfTrainingTeacherHook(Hook):
    """Keeps ``model.teacher`` (built by ``model.set_stage('self_train')``)
    in ``checkpoint['sign_teacher']``."""
    priority = 'VERY_HIGH'

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        teacher = getattr(unwrap_model(runner), 'teacher', None)
        if teacher is not None:
            checkpoint[CHECKPOINT_KEY] = teacher.state_dict()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        if is_training(runner) and is_resuming(runner) and \
                CHECKPOINT_KEY in checkpoint:
            unwrap_model(runner).build_teacher(checkpoint[CHECKPOINT_KEY])
