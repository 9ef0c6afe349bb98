"""Command-line arguments that ``tools/train.py`` and ``tools/test.py``
share, as mmseg's own tools define them."""
import argparse
import difflib
import os
import re

from mmengine.config import DictAction


class CfgOptionsAction(DictAction):
    """mmengine's ``DictAction`` (``--cfg-options KEY=VALUE ...``), with a
    clear error where it has none: an option without ``=`` (a raw
    ValueError) and a value it cannot parse (``dict(...)``: its parser
    recursed until Python stopped it)."""

    def __call__(self, parser, namespace, values, option_string=None):
        for kv in values:
            key, sep, val = kv.partition('=')
            if not sep or not key:
                parser.error(f'{option_string} {kv}: each option is '
                             'KEY=VALUE, e.g. train_cfg.stages.0.iters=8.')
            try:
                self._parse_iterable(val)
            except (RecursionError, AssertionError, ValueError):
                parser.error(
                    f'{option_string} {kv}: mmengine reads numbers, strings, '
                    'None, True / False, lists "[a,b]" and tuples "(a,b)" '
                    'here, not this value. Set one key at a time (e.g. '
                    f'{key}.0.iters=8 or {key}.KEY=VALUE), or write a config '
                    'that inherits this one (_base_ = [...]) and changes '
                    'it.')
        super().__call__(parser, namespace, values, option_string)


def add_runner_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--cfg-options``, ``--launcher`` and ``--local-rank``.

    Args:
        parser (argparse.ArgumentParser): the tool's parser.
    """
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
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
    # torch.distributed.launch / torchrun (torch >= 2.0) pass `--local-rank`
    parser.add_argument('--local_rank', '--local-rank', type=int, default=0)


def parse_runner_args(parser: argparse.ArgumentParser,
                      argv=None) -> argparse.Namespace:
    """Parse ``argv`` and export ``LOCAL_RANK`` as mmseg's tools do.

    Args:
        parser (argparse.ArgumentParser): a parser with
            :func:`add_runner_args`.
        argv (list[str], optional): the arguments (default: ``sys.argv``).

    Returns:
        argparse.Namespace: the parsed arguments.
    """
    args = parser.parse_args(argv)
    config = getattr(args, 'config', None)
    if config is not None and not os.path.isfile(config):
        parser.error(f'config {config!r}: no such file (relative paths are '
                     f'read from {os.getcwd()}). Give the path of a config '
                     'file, e.g. configs/sign/sign_toy.py.')
    if 'LOCAL_RANK' not in os.environ:
        os.environ['LOCAL_RANK'] = str(args.local_rank)
    return args


def merge_cfg_options(cfg, options) -> None:
    """``cfg.merge_from_dict(options)``, then import the config's
    ``custom_imports`` again: mmengine imports them only when the file is
    read, so a module added by ``--cfg-options
    custom_imports.imports=[mmseg_sign,my_module]`` was written into the
    dumped config but never imported (its hooks and models silently
    absent). Importing a module twice is a no-op.

    Args:
        cfg (Config): the loaded config (changed in place).
        options (dict | None): ``--cfg-options``.
    """
    if not options:
        return
    check_option_keys(cfg, options)
    cfg.merge_from_dict(options)
    custom = cfg.get('custom_imports')
    if custom and any(k.startswith('custom_imports') for k in options):
        from mmengine.utils import import_modules_from_strings
        import_modules_from_strings(**custom)


#: top-level keys mmengine's Runner (``Runner.from_cfg``), mmseg's tools
#: and this project read when a config does not set them
RUNNER_KEYS = (
    'model',
    'work_dir',
    'train_dataloader',
    'val_dataloader',
    'test_dataloader',
    'train_cfg',
    'val_cfg',
    'test_cfg',
    'auto_scale_lr',
    'optim_wrapper',
    'param_scheduler',
    'val_evaluator',
    'test_evaluator',
    'default_hooks',
    'custom_hooks',
    'data_preprocessor',
    'load_from',
    'resume',
    'launcher',
    'env_cfg',
    'log_processor',
    'log_level',
    'visualizer',
    'default_scope',
    'randomness',
    'experiment_name',
    'model_wrapper_cfg',
    'compile',
    'cfg',
    'custom_imports',
    'runner_type',
    'activation_checkpointing',
    'efficient_conv_bn_eval',
    'resource_limit',
    'tta_model',
    'tta_pipeline',
    # this project's switches (docs/user_guide.md)
    'allow_untrained_gan',
    'allow_split_change',
    'overwrite_checkpoints')


def check_option_keys(cfg, options) -> None:
    """A ``--cfg-options`` key whose first part names nothing in the config
    and nothing the Runner or this project reads would be written into the
    config and never read: a misspelling (``alow_split_change=True``)
    would then change nothing without a word.

    Args:
        cfg (Config): the loaded config.
        options (dict): ``--cfg-options``.

    Raises:
        SystemExit: a usage error naming the key and the closest known
        ones, as the tools' other argument errors.
    """
    known = set(cfg.keys()) | set(RUNNER_KEYS)
    for key in options:
        negative = [p for p in key.split('.') if re.fullmatch(r'-\d+', p)]
        if negative:  # mmengine reads '-1' as a dict key of a list
            raise SystemExit(
                f'error: --cfg-options {key}=...: list items are named by '
                f'their position from 0 ({negative[0]} counts from the end, '
                "which mmengine's options do not read); write the position, "
                'e.g. train_cfg.stages.2.iters for the third stage.')
        top = key.split('.', 1)[0]
        if top in known:
            continue
        close = difflib.get_close_matches(top, sorted(known), n=3)
        raise SystemExit(
            f'error: --cfg-options {key}=...: the config has no {top!r} and '
            'nothing reads it, so it would change nothing' +
            (f'; did you mean {" / ".join(close)}?'
             if close else '; check the spelling against the config.'))
