"""WorkDirLockHook: one training run per work dir, whatever starts it."""
from mmengine.hooks import Hook

from mmseg.registry import HOOKS
from ...utils.work_dir_lock import lock_work_dir
from .runner_state import is_training


@HOOKS.register_module()
class WorkDirLockHook(Hook):
    """Lock ``runner.work_dir`` (:func:`mmseg_sign.utils.work_dir_lock.
    lock_work_dir`) when a training run starts, before it loads or writes
    any checkpoint; a second training run in the same work dir stops with
    an error naming the first one's pid. Test runs do not lock.

    In the schedule bases' ``default_hooks`` (``sign_lock``), so the lock
    holds for mmseg's ``tools/train.py``, ``mim train`` and a Runner built
    in Python as for this project's ``tools/train.py`` (which locks before
    building the Runner; the hook then finds the lock its own)."""
    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        if is_training(runner):
            lock_work_dir(runner.work_dir)
