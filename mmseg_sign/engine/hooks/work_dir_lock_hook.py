"""WorkDirLockHook: one training run per work dir, whatever starts it."""
import os
import os.path as osp
import re

from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmseg.registry import HOOKS

from ...utils.work_dir_lock import check_resume_source, lock_work_dir
from ..runner.runner_state import is_training


@HOOKS.register_module()
class WorkDirLockHook(Hook):
    """Lock ``runner.work_dir`` (:func:`mmseg_sign.utils.work_dir_lock.
    lock_work_dir`) when a training run starts, before it loads or writes
    any checkpoint; a second training run in the same work dir stops with
    an error naming the first one's pid. Test runs do not lock.

    In the schedule bases' ``default_hooks`` (``sign_lock``), so the lock
    holds for mmseg's ``tools/train.py``, ``mim train`` and a Runner built
    in Python as for this project's ``tools/train.py`` (which locks before
    building the Runner; the hook then finds the lock its own). It also
    refuses a new run (no ``--resume``) in a work dir that holds
    checkpoints, unless ``overwrite_checkpoints=True``, and ``--resume`` from
    another run's checkpoint into a work dir that holds checkpoints of its
    own (:func:`~mmseg_sign.utils.work_dir_lock.check_resume_source`)."""
    priority = 'VERY_HIGH'

    def before_run(self, runner) -> None:
        if is_training(runner):
            if lock_work_dir(runner.work_dir) is not None:
                remove_partial_writes(runner.work_dir)
            # before mmengine loads or writes a checkpoint
            # the Runner's own (also set when it is built in Python
            # without a config)
            check_resume_source(
                runner.work_dir,
                getattr(runner, '_load_from', runner.cfg.get('load_from')),
                bool(
                    getattr(runner, '_resume', runner.cfg.get('resume',
                                                              False))),
                bool(runner.cfg.get('overwrite_checkpoints', False)))


def remove_partial_writes(work_dir: str) -> None:
    """Delete the temporary files of writes a killed run left unfinished
    (``atomic_write``'s ``.NAME.*.tmp*``: a checkpoint cut short by
    ``kill -9``); the lock holder is the only writer, so none is live.

    Args:
        work_dir (str): the locked work dir.
    """
    for name in sorted(os.listdir(work_dir)):
        if re.fullmatch(r'\..+\.tmp(\.\w+)?', name):
            os.remove(osp.join(work_dir, name))
            print_log(
                f'{work_dir}: removed {name}, a write that a killed '
                'run left unfinished',
                logger='current')
