"""mmengine's Runner, whose config dump never replaces the config file
nor another run's config record, and which formats its config text once."""
import os
import os.path as osp

from mmengine.config import Config
from mmengine.dist import broadcast_object_list, get_rank, master_only
from mmengine.logging import print_log
from mmengine.runner import Runner
from mmseg.registry import RUNNERS

from ...utils.work_dir_lock import (check_config_dump, lock_work_dir,
                                    set_aside_checkpoints,
                                    work_dir_checkpoints)


class OnceFormattedConfig(Config):
    """mmengine's ``Config`` whose ``pretty_text`` is formatted once per
    content. mmengine formats the text with yapf (about 0.7 s for a SIGN
    config on a CPU core) each time it is asked: 4-5 times as a Runner
    starts (its log, the runtime info, the config dump) and once per
    checkpoint. The text is kept with what it was made of (the config as a
    plain dict) and made again when the config changes."""

    @property
    def pretty_text(self) -> str:
        made_of = repr(self.to_dict())
        kept = self.__dict__.get('_pretty_text')
        if kept is None or kept[0] != made_of:
            kept = (made_of, super().pretty_text)
            # an attribute of the object (Config's own __setattr__ would
            # write a key into the config)
            super(Config, self).__setattr__('_pretty_text', kept)
        return kept[1]

    @classmethod
    def of(cls, cfg):
        """``cfg`` (a Config) as a :class:`OnceFormattedConfig` (a new
        config of the same content, text, file name and environment
        variables, through ``Config``'s public constructor); anything else
        as it is."""
        if not isinstance(cfg, Config) or isinstance(cfg, cls):
            return cfg
        return cls(
            cfg.to_dict(),
            cfg_text=cfg.text,
            filename=cfg.filename,
            env_variables=cfg.env_variables)


def claim_log_dir(work_dir: str, timestamp: str) -> str:
    """The name of a new folder ``work_dir/NAME`` that this process made:
    ``timestamp``, or ``timestamp_K`` with the first free K (rank 0
    decides, the other ranks receive it).

    Args:
        work_dir (str): the run's work dir (it exists).
        timestamp (str): mmengine's ``%Y%m%d_%H%M%S``.

    Returns:
        str: the folder's name.
    """
    name = [timestamp]
    if get_rank() == 0:
        for k in range(10000):
            candidate = timestamp if k == 0 else f'{timestamp}_{k}'
            try:
                os.mkdir(osp.join(work_dir, candidate))
            except FileExistsError:
                continue
            name = [candidate]
            break
    broadcast_object_list(name)
    return name[0]


@RUNNERS.register_module()
class ConfigGuardRunner(Runner):
    """``Runner`` (``runner_type='ConfigGuardRunner'`` in the schedule
    bases; mmseg's own ``tools/train.py`` / ``tools/test.py`` and ``mim``
    build it too), whose config dump replaces nothing:

    * a work dir that holds the run's own config file is refused:
      ``Runner.__init__`` writes the resolved config to
      ``WORK_DIR/basename(config)`` before any hook exists, so with
      ``tools/train.py DIR/cfg.py --work-dir DIR`` the user's config lost
      its ``_base_`` and comments (this project's tools check the
      same before building a Runner:
      :func:`~mmseg_sign.utils.work_dir_lock.check_config_dump`);
    * a work dir that holds another run's record of that config (a
      training run's ``WORK_DIR/cfg.py``, then ``tools/test.py`` with its
      default work dir, or a refused or resumed run with other options)
      keeps it: this run's resolved config goes to its own log folder
      ``WORK_DIR/TIMESTAMP/cfg.py`` (where mmengine keeps every run's
      ``vis_data/config.py`` too), and the log says where.
      ``overwrite_checkpoints=True`` (a new run that replaces the old
      one) moves the old record aside with the old run's checkpoints
      (``WORK_DIR/replaced_TIMESTAMP/``) and writes its own.

    Its config formats its text once (:class:`OnceFormattedConfig`): a run
    starts ~3 s sooner on a CPU core, and each checkpoint is written ~0.7 s
    sooner.
    """

    def __init__(self, *args, cfg=None, **kwargs):
        super().__init__(*args, cfg=OnceFormattedConfig.of(cfg), **kwargs)

    def setup_env(self, env_cfg: dict) -> None:
        """mmengine's, then a log folder of this run's own: mmengine names
        it ``WORK_DIR/TIMESTAMP`` to the second, so two runs or tests
        started in the same second on one work dir shared it (the second's
        metrics json and config replaced the first's). Rank 0 claims the
        folder (an atomic ``mkdir``), adding ``_1``, ``_2``, ... to a name
        another process holds, and every rank takes its name."""
        super().setup_env(env_cfg)
        self._timestamp = claim_log_dir(self._work_dir, self._timestamp)

    @master_only
    def dump_config(self) -> None:
        check_config_dump(self.cfg.filename, self.work_dir)
        name = osp.basename(self.cfg.filename) if self.cfg.filename \
            else f'{self.timestamp}.py'
        record = osp.join(self.work_dir, name)
        if osp.isfile(record) and self.cfg.get('overwrite_checkpoints') and \
                work_dir_checkpoints(self.work_dir) and self.cfg.filename:
            # mmseg's tools / mim (WorkDirLockHook checks later): the run
            # this one replaces keeps its record beside its checkpoints
            lock_work_dir(self.work_dir)
            set_aside_checkpoints(self.work_dir, self.cfg.filename)
        if osp.isfile(record) and not self.cfg.get('overwrite_checkpoints'):
            with open(record, encoding='utf-8') as f:
                same = f.read() == self.cfg.pretty_text
            if not same:
                own = osp.join(self._log_dir, name)
                self.cfg.dump(own)
                print_log(
                    f'{record} records another run of this config (other '
                    f'options); kept as it is. This run\'s config: {own}.',
                    logger='current')
                return
        super().dump_config()
