"""Command-line arguments that ``tools/train.py`` and ``tools/test.py``
share, as mmseg's own tools define them."""
import argparse
import os

from mmengine.config import DictAction


def add_runner_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--cfg-options``, ``--launcher`` and ``--local-rank``.

    Args:
        parser (argparse.ArgumentParser): the tool's parser.
    """
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
    cfg.merge_from_dict(options)
    custom = cfg.get('custom_imports')
    if custom and any(k.startswith('custom_imports') for k in options):
        from mmengine.utils import import_modules_from_strings
        import_modules_from_strings(**custom)
