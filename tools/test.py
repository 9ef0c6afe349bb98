# Copyright (c) OpenMMLab. All rights reserved. Adapted for mmseg-sign.
"""Test (and evaluate) a segmentor; mmseg 1.2.2's ``tools/test.py``, with
``mmseg_sign`` imported so that its datasets, metric and models resolve,
``--launcher pytorch`` working on CPU processes (gloo), and a strict
checkpoint load: a checkpoint that lacks or mismatches the model's weights
is an error (``--lenient-load`` keeps mmengine's warn-and-continue)."""
import argparse
import os
import os.path as osp
import re
from collections.abc import Mapping

from mmengine.config import Config, DictAction
from mmengine.hooks import Hook
from mmengine.model import BaseTTAModel, is_model_wrapper
from mmengine.runner import Runner

import mmseg_sign  # noqa: F401
from mmseg_sign.utils import use_gloo_without_cuda


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
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=DictAction,
        help='override some settings in the used config, the key-value pair '
        'in xxx=yyy format will be merged into config file. If the value to '
        'be overwritten is a list, it should be like key="[a,b]" or key=a,b '
        'It also allows nested list/tuple values, e.g. key="[(a,b),(c,d)]" '
        'Note that the quotation marks are necessary and that no white space '
        'is allowed.')
    parser.add_argument(
        '--launcher',
        choices=['none', 'pytorch', 'slurm', 'mpi'],
        default='none',
        help='job launcher')
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
    # When using PyTorch version >= 2.0.0, the `torch.distributed.launch`
    # will pass the `--local-rank` parameter to `tools/train.py` instead
    # of `--local_rank`.
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)
    args = parser.parse_args()
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)

    return args


def trigger_visualization_hook(cfg, args):
    default_hooks = cfg.default_hooks
    if 'visualization' in default_hooks:
        visualization_hook = default_hooks['visualization']
        # Turn on visualization
        visualization_hook['draw'] = True
        if args.show:
            visualization_hook['show'] = True
            visualization_hook['wait_time'] = args.wait_time
        if args.show_dir:
            visualizer = cfg.visualizer
            visualizer['save_dir'] = args.show_dir
    else:
        raise RuntimeError(
            'VisualizationHook must be included in default_hooks.'
            'refer to usage '
            '"visualization=dict(type=\'VisualizationHook\')"')

    return cfg


SHOWN_KEYS = 5  # keys named per kind of mismatch


def _some(keys) -> str:
    keys = list(keys)
    more = len(keys) - SHOWN_KEYS
    return ', '.join(keys[:SHOWN_KEYS]) + (f' (and {more} more)'
                                           if more > 0 else '')


def _shape(value) -> list:
    return list(value.shape)


def checkpoint_mismatches(model, checkpoint, dataset_classes=None) -> list:
    """What keeps ``checkpoint`` from loading exactly into ``model``, one
    line per kind of problem (empty: it matches).

    Compares as mmengine's loader does: the weights are
    ``checkpoint['state_dict']`` (or the checkpoint itself) with a
    ``module.`` prefix stripped, the model is unwrapped from its wrappers
    (DDP, TTA), and BN's ``num_batches_tracked`` may be absent. Also
    compares the class count of the dataset the checkpoint was trained on
    (``meta.dataset_meta``, written by mmengine) with the test dataset's.
    """
    while is_model_wrapper(model) or isinstance(model, BaseTTAModel):
        model = model.module
    if not isinstance(checkpoint, Mapping):
        return [f'it holds a {type(checkpoint).__name__}, not a dict with '
                'a state_dict']
    state = checkpoint.get('state_dict', checkpoint)
    if not isinstance(state, Mapping):
        return [f"its 'state_dict' is a {type(state).__name__}, not a dict "
                'of tensors']
    state = {re.sub(r'^module\.', '', k): v for k, v in state.items()}
    expected = model.state_dict()
    problems = []
    missing = [k for k in expected
               if k not in state and 'num_batches_tracked' not in k]
    if missing:
        total = sum('num_batches_tracked' not in k for k in expected)
        problems.append(
            f'missing from the checkpoint: {len(missing)} of the model\'s '
            f'{total} weight tensors: {_some(missing)}')
    unexpected = [k for k in state if k not in expected]
    if unexpected:
        problems.append(
            f'unexpected in the checkpoint (not in the model): '
            f'{len(unexpected)} weight tensor(s): {_some(unexpected)}')
    mismatched = [(k, _shape(state[k]), _shape(v))
                  for k, v in expected.items()
                  if k in state and hasattr(state[k], 'shape') and
                  hasattr(v, 'shape') and _shape(state[k]) != _shape(v)]
    if mismatched:
        problems.append(
            f'size mismatch: {len(mismatched)} weight tensor(s): ' +
            _some(f'{k} (checkpoint {a}, model {b})'
                  for k, a, b in mismatched))
        seg = [(a, b) for k, a, b in mismatched
               if k.endswith('conv_seg.weight') and a and b]
        if seg:
            problems.append(
                f'the checkpoint\'s classifier has {seg[0][0][0]} outputs, '
                f"the model's {seg[0][1][0]}: it was trained for another "
                'class count (decode_head.num_classes)')
    meta = checkpoint.get('meta')
    trained = meta.get('dataset_meta') if isinstance(meta, Mapping) else None
    trained = trained.get('classes') if isinstance(trained, Mapping) \
        else None
    if trained is not None and dataset_classes is not None and \
            len(trained) != len(dataset_classes):
        problems.append(
            f'the checkpoint was trained on {len(trained)} classes, the '
            f'test dataset has {len(dataset_classes)}')
    return problems


class CheckpointMismatchError(RuntimeError):
    pass


class StrictCheckpointHook(Hook):
    """Checks the checkpoint ``Runner.load_checkpoint`` is about to load
    into the model (``after_load_checkpoint`` runs between reading the file
    and loading it; registered last, it sees the checkpoint as every other
    hook left it) and raises :class:`CheckpointMismatchError` on a
    mismatch, on every process."""

    def __init__(self, checkpoint_path: str, config_path: str):
        self.checkpoint_path = checkpoint_path
        self.config_path = config_path

    def after_load_checkpoint(self, runner, checkpoint) -> None:
        classes = None
        loop = getattr(runner, '_test_loop', None)
        dataset = getattr(getattr(loop, 'dataloader', None), 'dataset', None)
        metainfo = getattr(dataset, 'metainfo', None)
        if isinstance(metainfo, Mapping):
            classes = metainfo.get('classes')
        problems = checkpoint_mismatches(runner.model, checkpoint, classes)
        if not problems:
            return
        meta = checkpoint.get('meta') if isinstance(checkpoint,
                                                    Mapping) else None
        trained_as = ''
        if isinstance(meta, Mapping) and meta.get('experiment_name'):
            trained_as = (f" (it was written by the run "
                          f"{meta['experiment_name']!r}; its meta['cfg'] "
                          'holds that config)')
        raise CheckpointMismatchError(
            f'The checkpoint {self.checkpoint_path} does not match the model '
            f'of {self.config_path}:\n  - ' + '\n  - '.join(problems) +
            '\nTest with the config this checkpoint was trained with'
            f'{trained_as}, or pass --lenient-load to evaluate anyway with '
            "mmengine's lenient load (weights it cannot load keep their "
            'random initialisation, so the scores are meaningless).')


def main():
    args = parse_args()

    # load config
    cfg = Config.fromfile(args.config)
    cfg.launcher = args.launcher
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)

    # work_dir is determined in this priority: CLI > segment in file > filename
    if args.work_dir is not None:
        # update configs according to CLI args if args.work_dir is not None
        cfg.work_dir = args.work_dir
    elif cfg.get('work_dir', None) is None:
        # use config filename as default work_dir if cfg.work_dir is None
        cfg.work_dir = osp.join('./work_dirs',
                                osp.splitext(osp.basename(args.config))[0])

    use_gloo_without_cuda(cfg)

    cfg.load_from = args.checkpoint

    if args.show or args.show_dir:
        cfg = trigger_visualization_hook(cfg, args)

    if args.tta:
        cfg.test_dataloader.dataset.pipeline = cfg.tta_pipeline
        cfg.tta_model.module = cfg.model
        cfg.model = cfg.tta_model

    # add output_dir in metric
    if args.out is not None:
        cfg.test_evaluator['output_dir'] = args.out
        cfg.test_evaluator['keep_results'] = True

    # build the runner from config
    runner = Runner.from_cfg(cfg)
    if not args.lenient_load:
        runner.register_hook(
            StrictCheckpointHook(args.checkpoint, args.config),
            priority='LOWEST')

    # start testing
    try:
        runner.test()
    except CheckpointMismatchError as err:
        raise SystemExit(f'tools/test.py: error: {err}') from None


if __name__ == '__main__':
    main()
