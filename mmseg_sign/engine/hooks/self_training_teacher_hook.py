"""SelfTrainingTeacherHook: the model's run state outside its weights is
saved with every checkpoint and restored by ``--resume``, so a resumed run
continues as the uninterrupted one (as mmengine's ``EMAHook`` keeps its
averaged model): the frozen teacher of self-training (paper section 3.4),
and the feature-size cache of the transfer stage's synthetic blocks (filled
by one SIM pass, which draws ``z``; refilled after a resume it would shift
every later random draw)."""
from mmengine.hooks import Hook
from mmseg.registry import HOOKS

from ..runner.runner_state import is_resuming, is_training, unwrap_model

CHECKPOINT_KEY = 'sign_teacher'
FEATURE_SIZES_KEY = 'sign_feature_sizes'


@HOOKS.register_module()
class SelfTrainingTeacherHook(Hook):
    """Keeps ``model.teacher`` (built by ``model.set_stage('self_train')``)
    in ``checkpoint['sign_teacher']`` and ``model.feature_sizes`` in
    ``checkpoint['sign_feature_sizes']``."""
    priority = 'VERY_HIGH'

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        model = unwrap_model(runner)
        teacher = getattr(model, 'teacher', None)
        if teacher is not None:
            checkpoint[CHECKPOINT_KEY] = teacher.state_dict()
        sizes = getattr(model, 'feature_sizes', None)
        if sizes:
            checkpoint[FEATURE_SIZES_KEY] = sizes

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        if not (is_training(runner) and is_resuming(runner)):
            return
        model = unwrap_model(runner)
        if CHECKPOINT_KEY in checkpoint:
            model.build_teacher(checkpoint[CHECKPOINT_KEY])
        if FEATURE_SIZES_KEY in checkpoint and \
                hasattr(model, 'feature_sizes'):
            model.feature_sizes = checkpoint[FEATURE_SIZES_KEY]
