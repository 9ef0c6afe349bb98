"""The results file of a toy table (``WORK_DIR/results.json``): read it,
add a run under a lock, and know a run by what it ran."""
import argparse
import fcntl
import functools
import glob
import hashlib
import json
import math
import numbers
import os.path as osp
from pathlib import Path
from typing import Optional

from mmengine.config import Config

from ..utils.atomic import atomic_write
from ..utils.cli import CfgOptionsAction

#: Metric keys (and key prefixes) whose values are percentages.
PERCENT_KEYS = ('mIoU', 'hIoU')
PERCENT_PREFIXES = ('mIoU_', 'IoU.')


def run_key(cfg_path: str,
            amp_dtype=None,
            cfg_options=(),
            seed_key: str = 'randomness.seed') -> str:
    """What a run ran, as a short hash: the resolved config (the file and
    everything it inherits, with ``cfg_options`` merged; the data root and
    seed that :func:`train` adds are not part of it) and the autocast
    dtype. Two configs with one file name, or one config with other
    ``--cfg-options``, get different keys.

    Args:
        cfg_path (str): the config.
        amp_dtype (str, optional): ``--amp-dtype``.
        cfg_options (Sequence[str]): ``KEY=VALUE`` items.
        seed_key (str): the key the run's seed sets (part of the key where
            it is not ``randomness.seed``).

    Returns:
        str: 12 hex digits.
    """
    return _run_key(cfg_path, amp_dtype, tuple(cfg_options), seed_key)


#: top-level keys that only compose other keys (a recipe's parts, written
#: once and read where they are used: configs/_base_/schedules/
#: lite0_adamw_poly.py, sign_toy_600_400_400.py, sign_camvid_2000_400_400.py)
#: or say how a run is scored afterwards (``test_split``,
#: configs/_base_/datasets/camvid_zs.py; ``allow_split_change``, the
#: supervised ceiling's, which tools/test.py reads): what a run ran is what
#: they compose into
COMPOSITION_KEYS = ('lite0_optimizer', 'lite0_paramwise_cfg', 'lite0_poly',
                    'segmentor_sgd', 'gan_adam', 'ast_stage', 'test_split',
                    'allow_split_change')


@functools.lru_cache(maxsize=None)  # a command asks once per config
def _run_key(cfg_path: str, amp_dtype, cfg_options: tuple,
             seed_key: str) -> str:
    cfg = Config.fromfile(cfg_path)
    if cfg_options:
        cfg.merge_from_dict(parse_cfg_options(cfg_options))
    for key in COMPOSITION_KEYS:
        cfg.pop(key, None)
    text = f'{cfg.pretty_text}\namp_dtype={amp_dtype}'
    if seed_key != 'randomness.seed':
        text += f'\nseed_key={seed_key}'
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def parse_cfg_options(cfg_options) -> dict:
    """``KEY=VALUE`` items parsed as tools/train.py parses
    ``--cfg-options`` (mmengine's ``DictAction``).

    Args:
        cfg_options (Sequence[str]): the items.

    Returns:
        dict: ``{KEY: value}`` for ``Config.merge_from_dict``.
    """
    parser = argparse.ArgumentParser()
    parser.add_argument('--options', nargs='+', action=CfgOptionsAction)
    return parser.parse_args(['--options', *cfg_options]).options


def read_results(path: str) -> dict:
    """The runs stored in a toy table's ``results.json`` (``{}`` if there
    is none).

    Args:
        path (str): the file.

    Returns:
        dict: ``{STEM/DATA_SEED/SEED: run}``.

    Raises:
        ValueError: the file is not a results file, naming it and the fix.
    """
    if not osp.exists(path):
        return {}
    try:
        with open(path) as f:
            results = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f'{path} is not a toy-table results file ({err}); it was '
            'damaged or replaced. Move it away (its runs will be trained '
            'again) or use another --work-dir.') from None
    if not isinstance(results, dict):
        raise ValueError(f'{path} holds a {type(results).__name__}, not the '
                         'runs of a toy table; move it away or use another '
                         '--work-dir.')
    for name, run in results.items():
        problem = _bad_metric(run)
        if problem:
            raise ValueError(
                f'{path}: run {name!r} {problem}; a table would average it '
                'into a row. Remove the run from the file (it is trained '
                'again) or correct the value.')
    return results


def _bad_metric(run) -> Optional[str]:
    """What is wrong with a stored run's metrics (``None``: nothing): every
    IoU metric (``mIoU*``, ``hIoU``, ``IoU.*``, at the top or in a stage's
    dict) is a finite number in [0, 100], each ``*_boot_sd`` and
    ``seconds`` finite and >= 0; other entries are not read here."""
    if not isinstance(run, dict):
        return f'is a {type(run).__name__}, not a run'
    seconds = run.get('seconds')
    if seconds is not None and not _number_in(seconds, 0, math.inf):
        return f'has seconds={seconds!r}'
    for stage, metrics in run.items():
        if stage in ('params', 'key', 'seconds'):
            continue
        items = metrics.items() if isinstance(metrics, dict) else \
            [(None, metrics)]
        for key, value in items:
            name = stage if key is None else f'{stage}.{key}'
            leaf = stage if key is None else key
            if leaf.endswith('_boot_sd'):
                high = math.inf
            elif leaf in PERCENT_KEYS or leaf.startswith(PERCENT_PREFIXES):
                high = 100
            else:
                continue
            if not _number_in(value, 0, high):
                return (f'has {name}={value!r} (an IoU metric is a number '
                        f'in [0, {high:g}])')
    return None


def _number_in(value, low, high) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and math.isfinite(value) and low <= value <= high


def record_run(path: str, name: str, run: dict) -> dict:
    """Add run ``name`` to the results file ``path`` and return all its
    runs: under an exclusive lock (``path.lock``), the file is read again,
    the run added and the file replaced atomically, so toy tables that
    share a work dir (or their parallel jobs) never drop each other's runs.

    Args:
        path (str): the table's ``results.json``.
        name (str): the run's key.
        run (dict): its result.

    Returns:
        dict: every run the file holds now.
    """
    with open(path + '.lock', 'a') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            results = read_results(path)
            results[name] = run
            text = json.dumps(results, indent=1)
            atomic_write(path, lambda tmp: Path(tmp).write_text(text))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return results


#: a finished run's result, beside its checkpoints
RUN_RESULT = 'toy_table_run.json'


def keep_run(run_dir: str, name: str, run: dict) -> str:
    """Write a finished run's result beside its checkpoints (atomically),
    before it goes to the results file: a results file that cannot be
    written then loses nothing (:func:`adopt_finished_runs`).

    Args:
        run_dir (str): the run's work dir.
        name (str): its key in the results file.
        run (dict): its result.

    Returns:
        str: the file written.
    """
    text = json.dumps(dict(name=name, run=run))
    return atomic_write(
        osp.join(run_dir, RUN_RESULT), lambda tmp: Path(tmp).write_text(text))


def adopt_finished_runs(wd: str, results: dict) -> list:
    """Store the finished runs of ``wd`` whose result never reached
    ``WD/results.json`` (the file could not be written: disk full, a size
    limit, damaged meanwhile): their :data:`RUN_RESULT` files.

    Args:
        wd (str): the table's work dir.
        results (dict): the stored runs, updated in place.

    Returns:
        list[str]: the names adopted.
    """
    path = osp.join(wd, 'results.json')
    adopted = []
    for kept in sorted(glob.glob(osp.join(wd, '*', RUN_RESULT))):
        try:
            with open(kept) as f:
                entry = json.load(f)
            name, run = entry['name'], entry['run']
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not ours, or written half: the run is retrained
        if name not in results:
            results.update(record_run(path, name, run))
            adopted.append(name)
    return adopted
