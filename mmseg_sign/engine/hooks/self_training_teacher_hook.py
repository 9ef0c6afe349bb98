"""SelfTrainingTeacherHook: the model's run state outside its weights is
saved with every checkpoint and restored by ``--resume``, so a resumed run
continues as the uninterrupted one (as mmengine's ``EMAHook`` keeps its
averaged model): the frozen teacher of self-training (paper section 3.4),
and the feature-size cache of the transfer stage's synthetic blocks (filled
by one SIM pass, which draws ``z``; refilled after a resume it would shift
every later random draw)."""
import torch
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
            source = runner.cfg.get('load_from') or \
                "the work dir's last checkpoint"
            try:
                model.feature_sizes = checkpoint[FEATURE_SIZES_KEY]
            except ValueError as err:
                raise ValueError(f"--resume from {source}: its "
                                 f"checkpoint['{FEATURE_SIZES_KEY}'] is "
                                 f'damaged: {err}') from None
            check_feature_sizes(model, source)


def feature_size_of(model, height: int, width: int) -> tuple:
    """``(h, w)`` of the model's feature map for an input of ``height ×
    width``, by a forward of zeros that changes nothing: no gradient, the
    model in eval mode (no BN statistics updated, no z drawn) and torch's
    random state restored."""
    param = next(model.parameters())
    was_training = model.training
    with torch.random.fork_rng(devices=[] if param.device.type ==
                               'cpu' else [param.device]), torch.no_grad():
        model.eval()
        try:
            feats = model.extract_feat(param.new_zeros(1, 3, height, width))
        finally:
            model.train(was_training)
    return tuple((feats[0] if isinstance(feats,
                                         (list, tuple)) else feats).shape[2:])


def check_feature_sizes(model, source: str) -> None:
    """The resumed feature-size cache (``[[H, W, h, w], ...]``) is what
    the model gives for each input size (a damaged one made the synthetic
    blocks train on the wrong number of pixels)."""
    for height, width, h, w in model.feature_sizes:
        want = feature_size_of(model, height, width)
        if want != (h, w):
            raise ValueError(
                f'--resume from {source}: its '
                f"checkpoint['{FEATURE_SIZES_KEY}'] says a {height}×{width} "
                f'input gives a {h}×{w} feature map, but this model gives '
                f'{want[0]}×{want[1]}: the checkpoint is damaged or of '
                'another model. Resume from another checkpoint of the run, '
                'or delete the key (the cache is then refilled).')
