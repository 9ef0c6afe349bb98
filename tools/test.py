# Copyright (c) OpenMMLab. All rights reserved. Adapted for mmseg-sign.
"""Test (and evaluate) a segmentor; mmseg 1.2.2's ``tools/test.py``, with
``mmseg_sign`` imported so that its datasets, metric and models resolve,
``--launcher pytorch`` working on CPU processes (gloo), and a strict
checkpoint load: a checkpoint that lacks or mismatches the model's weights
is an error (``--lenient-load`` keeps mmengine's warn-and-continue), and so is
a test dataset whose seen/unseen split differs from the checkpoint's
(``--allow-split-change`` allows it, for cross-split studies)."""
import argparse
import os.path as osp

from mmengine.config import Config
from mmseg.registry import RUNNERS

from mmseg_sign.apis.grown_config import check_lists_classes
from mmseg_sign.engine.hooks import (CheckpointMismatchError,
                                     StrictCheckpointHook)
from mmseg_sign.engine.runner import ConfigGuardRunner
from mmseg_sign.utils import (UnreadableCheckpointError, UnsafeCheckpointError,
                              use_gloo_without_cuda)
from mmseg_sign.utils.atomic import check_output_dir, dataset_folders
from mmseg_sign.utils.cli import (add_runner_args, merge_cfg_options,
                                  parse_runner_args)
from mmseg_sign.utils.work_dir_lock import check_config_dump, check_work_dir


# TODO: support fuse_conv_bn, visualization, and format_only
def parse_args():
    parser = argparse.ArgumentParser(
        description='MMSeg test (and eval) a model')
    parser.add_argument('config', help='train config file path')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument(
        '--work-dir',
        help=('if specified, the evaluation metric results will be dumped'
              'into the directory as json'))
    parser.add_argument(
        '--out',
        type=str,
        help='The directory to save output prediction for offline evaluation')
    parser.add_argument(
        '--show', action='store_true', help='show prediction results')
    parser.add_argument(
        '--show-dir',
        help='directory where painted images will be saved. '
        'If specified, it will be automatically saved '
        'to the work_dir/timestamp/show_dir')
    parser.add_argument(
        '--wait-time', type=float, default=2, help='the interval of show (s)')
    add_runner_args(parser)
    parser.add_argument(
        '--tta', action='store_true', help='Test time augmentation')
    parser.add_argument(
        '--lenient-load',
        action='store_true',
        help='load the checkpoint as mmengine does by default: missing, '
        'unexpected and wrong-size weights only give a warning and keep the '
        "model's random initialisation. Without it a checkpoint that does "
        'not match the model (or the test dataset\'s class count) is an '
        'error.')
    parser.add_argument(
        '--allow-split-change',
        action='store_true',
        help='test on a seen/unseen split other than the one the checkpoint '
        'was trained with (for deliberate cross-split studies). Without it '
        "a test dataset whose unseen classes differ from the checkpoint's "
        '(decode_head.unseen_mask) is an error. A config that trains on '
        'another split by design (the supervised ceiling) says so with '
        'allow_split_change = True.')
    args = parse_runner_args(parser)

    return args


def trigger_visualization_hook(cfg, args):
    """Turn on mmseg's visualization hook (``--show`` / ``--show-dir``)."""
    hook = cfg.default_hooks.get('visualization')
    if hook is None:
        raise RuntimeError('VisualizationHook must be included in '
                           "default_hooks: visualization=dict(type="
                           "'SegVisualizationHook')")
    hook['draw'] = True
    if args.show:
        hook.update(show=True, wait_time=args.wait_time)
    if args.show_dir:
        cfg.visualizer['save_dir'] = args.show_dir
    return cfg


def main():
    args = parse_args()
    if '://' not in args.checkpoint and not osp.isfile(args.checkpoint):
        raise SystemExit(
            f'tools/test.py: error: the checkpoint {args.checkpoint} ' +
            ('is a directory' if osp.isdir(args.checkpoint
                                           ) else 'does not exist') +
            '; give a checkpoint file, e.g. '
            'WORK_DIR/iter_N.pth.')

    # load config
    cfg = Config.fromfile(args.config)
    cfg.launcher = args.launcher
    merge_cfg_options(cfg, args.cfg_options)
    try:
        check_lists_classes(cfg)  # a model grown by an unlisted class
    except ValueError as err:
        raise SystemExit(f'tools/test.py: error: {err}') from None

    # work_dir is determined in this priority: CLI > segment in file > filename
    if args.work_dir is not None:
        # update configs according to CLI args if args.work_dir is not None
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        # use config filename as default work_dir if cfg.work_dir is None
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])
    try:  # mmengine's Runner writes the config into the work dir
        check_work_dir(cfg.work_dir)
        check_config_dump(args.config, cfg.work_dir)
    except ValueError as err:
        raise SystemExit(f'tools/test.py: error: {err}') from None

    use_gloo_without_cuda(cfg)

    cfg.load_from = args.checkpoint

    if args.show or args.show_dir:
        cfg = trigger_visualization_hook(cfg, args)

    if args.tta:
        cfg.test_dataloader.dataset.pipeline = cfg.tta_pipeline
        cfg.tta_model.module = cfg.model
        cfg.model = cfg.tta_model

    # never write predictions or drawings into the data it reads
    for out, example in ((args.out, 'work_dirs/predictions'),
                         (args.show_dir, 'work_dirs/vis')):
        if out:
            try:
                check_output_dir(
                    out, dataset_folders(cfg.test_dataloader.get('dataset')),
                    example)
            except ValueError as err:
                raise SystemExit(f'tools/test.py: error: {err}') from None

    # add output_dir in metric
    if args.out is not None:
        cfg.test_evaluator['output_dir'] = args.out
        cfg.test_evaluator['keep_results'] = True

    # build the runner from config (as mmseg's tools/test.py: the config's
    # runner_type, else the project's Runner, whose config dump replaces no
    # other run's record, e.g. the training run's in the same work dir)
    if 'runner_type' not in cfg:
        runner = ConfigGuardRunner.from_cfg(cfg)
    else:
        runner = RUNNERS.build(cfg)
    runner.register_hook(  # always: ResumeCheckHook would add a strict one
        StrictCheckpointHook(
            args.checkpoint,
            args.config,
            check_weights=not args.lenient_load,
            # the flag, or a config that trains on another split by design
            # (the supervised ceiling: every class seen)
            check_split=not (args.allow_split_change
                             or cfg.get('allow_split_change', False))),
        priority='LOWEST')

    # start testing
    try:
        runner.test()
    except (CheckpointMismatchError, UnreadableCheckpointError,
            UnsafeCheckpointError) as err:
        raise SystemExit(f'tools/test.py: error: {err}') from None


if __name__ == '__main__':
    main()
