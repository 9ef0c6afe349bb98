"""mmengine's Runner, whose config dump never replaces the config file."""
from mmengine.runner import Runner

from mmseg.registry import RUNNERS
from ...utils.work_dir_lock import check_config_dump


@RUNNERS.register_module()
class ConfigGuardRunner(Runner):
    """``Runner`` (``runner_type='ConfigGuardRunner'`` in the schedule
    bases), refusing a work dir that holds the run's own config file.

    ``Runner.__init__`` writes the resolved config to
    ``WORK_DIR/basename(config)`` before any hook exists, so with
    ``tools/train.py DIR/cfg.py --work-dir DIR`` mmseg's own tool (which
    builds ``runner_type``; ``mim train`` runs it) replaced the user's
    config: its ``_base_`` and comments gone, the run's options baked in
    (issue 41). This project's tools check the same before building a
    Runner (:func:`~mmseg_sign.utils.work_dir_lock.check_config_dump`).
    Everything else is mmengine's.
    """

    def dump_config(self) -> None:
        check_config_dump(self.cfg.filename, self.work_dir)
        super().dump_config()
