"""Toy tables' runs: shipped configs trained with tools/train.py on the
built-in toy data (or their own) over training seeds and toy data seeds
(``tools/toy_table.py``, docs/toy_results.md); the markdown is
:mod:`.toy_markdown`, the results file :mod:`.toy_results`."""
import copy
import functools
import glob
import json
import os
import os.path as osp
import platform
import re
import subprocess
import sys
import threading
import time
import zipfile
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Optional

import torch
from mmengine.config import Config

from ..structures.stage_plan import StagePlan
from ..utils.work_dir_lock import (lock_work_dir, set_aside_checkpoints,
                                   unlock_work_dir, work_dir_checkpoints)
from .logs import logged_records
from .toy_data import check_toy_data, make_toy_dataset
from .toy_markdown import KEYS
from .toy_results import (COMPOSITION_KEYS, RUN_RESULT, keep_run,
                          parse_cfg_options, record_run, run_key)

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

# Runs the command in argv[1:] after asking Linux to send it SIGTERM when
# the thread that started it dies (prctl PR_SET_PDEATHSIG, kept across
# exec): a table killed even by `kill -9` leaves no run training on as an
# orphan. (subprocess's preexec_fn would do it too, but is not safe in the
# runner's threads.)
_DIE_WITH_PARENT = (
    'import ctypes, os, signal, sys\n'
    'if sys.platform.startswith("linux"):\n'
    '    ctypes.CDLL(None).prctl(1, signal.SIGTERM)\n'
    '    if os.getppid() != int(sys.argv[1]):\n'
    '        sys.exit("toy_table: the table process is gone")\n'
    'os.execv(sys.argv[2], sys.argv[2:])\n')

#: mmengine resolves a config's ``mmseg::`` bases through pkg_resources,
#: which is not thread-safe: the runs' threads read configs one at a time
_CONFIG_READ = threading.Lock()


def read_config(path: str) -> Config:
    """``Config.fromfile(path)``, one thread at a time."""
    with _CONFIG_READ:
        return Config.fromfile(path)


def stage_ends(cfg_path: str) -> dict:
    """``{stage name: last iteration}`` of the config's plan (the last
    stage of a name wins); ``{'end': None}`` without a plan. ``cfg_path``:
    a shipped config, or the one a run dumped in its work dir.

    Args:
        cfg_path (str): the config file.

    Returns:
        dict[str, int | None]: each stage's last iteration.
    """
    plan = StagePlan.from_config(read_config(cfg_path))
    if plan is None:
        return {'end': None}
    return {s['name']: plan.start(i) + s['iters'] for i, s in enumerate(plan)}


def config_as_run(run_dir: str, cfg_path: Optional[str] = None):
    """The config file of what the run's last attempt ran (its
    ``--cfg-options`` merged): the newest log folder's
    ``vis_data/config.py`` (mmengine records every attempt's there). The
    work dir's own dump, ``RUN_DIR/CONFIG.py``, is the fallback: where it
    records another attempt (other options, a shared start), the Runner
    keeps it (``ConfigGuardRunner``), so it can be stale.

    Args:
        run_dir (str): the run's work dir.
        cfg_path (str, optional): the config the run was started with
            (without it: the work dir's one dumped config).

    Returns:
        str | None: a config file (None: no record, or several dumps).
    """
    records = glob.glob(
        osp.join(run_dir, '[0-9]*_[0-9]*', 'vis_data', 'config.py'))
    if records:
        return max(records, key=osp.getmtime)
    if cfg_path is not None:
        return osp.join(run_dir, osp.basename(cfg_path))
    dumps = glob.glob(osp.join(run_dir, '*.py'))
    return dumps[0] if len(dumps) == 1 else None


def readable_checkpoint(path: str) -> bool:
    """Whether ``path`` is a whole torch checkpoint (a zip archive with
    its central directory: a file cut short has none), without reading
    its tensors."""
    return osp.isfile(path) and zipfile.is_zipfile(path)


def _iteration_of(path: str) -> int:
    match = re.search(r'iter_(\d+)\.pth$', path)
    return int(match.group(1)) if match else -1


def run_tool(cmd, threads=None) -> None:
    """``cmd`` (a tool's command line) in a child that dies with this
    process, with ``OMP_NUM_THREADS=threads`` if given; a RuntimeError with
    its stderr's end if it fails."""
    env = dict(os.environ)
    if threads:
        env['OMP_NUM_THREADS'] = str(threads)
    proc = subprocess.run(
        [sys.executable, '-c', _DIE_WITH_PARENT,
         str(os.getpid()), *cmd],
        capture_output=True,
        text=True,
        env=env)
    if proc.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{proc.stderr[-4000:]}')


def data_options(cfg_path, data_root) -> list:
    """The ``--cfg-options`` that point a config at the toy data of
    ``data_root`` (none for ``None``: the config's own data).

    Args:
        cfg_path (str): the config.
        data_root (str | None): the toy dataset (and its class table).

    Returns:
        list[str]: ``KEY=VALUE`` items.
    """
    if data_root is None:
        return []
    options = []
    if takes_class_table(cfg_path):
        # a zero-shot head's table (a supervised one, FCN, has none)
        options.append(f'model.decode_head.class_embeddings='
                       f'{data_root}/class_embeddings.npz')
    return options + [
        f'{loader}.dataset.data_root={data_root}'
        for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader')
    ]


def _flat_options(prefix: str, settings: dict) -> list:
    """``PREFIX.KEY=VALUE`` items of a nested dict (``--cfg-options``)."""
    out = []
    for k, v in settings.items():
        if isinstance(v, dict):
            out += _flat_options(f'{prefix}.{k}', v)
        else:
            out.append(f'{prefix}.{k}={v}')
    return out


def score_test_split(cfg_path,
                     run_dir,
                     data_root=None,
                     cfg_options=(),
                     shared=None,
                     threads=None) -> dict:
    """A run's metrics on its config's ``test_split`` (settings of the test
    dataset: CamVid's test photographs, configs/_base_/datasets/camvid_zs.py)
    at each stage end
    whose checkpoint is kept: ``tools/test.py`` on ``iter_END.pth`` (the
    sibling's for the stages a shared start took from it), in
    ``RUN_DIR/test_split/STAGE``.

    Args:
        cfg_path (str): the config the run ran.
        run_dir (str): the run's work dir.
        data_root (str | None): :func:`data_options`'.
        cfg_options (Sequence[str]): the run's ``--cfg-options``.
        shared (tuple, optional): :func:`shared_start`'s, where the run
            started from a sibling.
        threads (int, optional): the test's ``OMP_NUM_THREADS``.

    Returns:
        dict: ``{stage: metrics}`` (empty without a ``test_split``).
    """
    cfg = _resolved(cfg_path, cfg_options)
    split = cfg.get('test_split')
    if not split:
        return {}
    options = [
        *cfg_options, *data_options(cfg_path, data_root),
        *_flat_options('test_dataloader.dataset', split)
    ]
    tested = _resolved(cfg_path, options).test_dataloader.dataset
    missing = [p for p in _dataset_folders(tested) if not osp.isdir(p)]
    if missing:  # data converted before the split was: the run stands
        print(
            f'{run_dir}: not scored on the test split ({", ".join(missing)}'
            ' missing: convert the dataset again, docs/camvid.md)',
            flush=True)
        return {}
    out = {}
    ends = stage_ends(config_as_run(run_dir, cfg_path))
    for stage, end in ends.items():
        folder = shared[1] if shared and end is not None and \
            end <= shared[2] else run_dir
        if end is None:  # no plan: the run's last checkpoint
            kept = [
                _iteration_of(p)
                for p in glob.glob(osp.join(folder, 'iter_*.pth'))
            ]
            end = max(kept, default=None)
        checkpoint = osp.join(folder, f'iter_{end}.pth')
        if end is None or not readable_checkpoint(checkpoint):
            continue
        work_dir = osp.join(run_dir, 'test_split', stage)
        cmd = [
            sys.executable,
            osp.join(REPO, 'tools', 'test.py'), cfg_path, checkpoint,
            '--work-dir', work_dir, '--cfg-options', *options
        ]
        run_tool(cmd, threads)
        logs = sorted(glob.glob(osp.join(work_dir, '*', '*.json')))
        with open(logs[-1]) as f:
            metrics = json.loads(f.read().splitlines()[-1])
        out[stage] = {
            k: v
            for k, v in metrics.items()
            if k in KEYS or k == 'mIoU' or k.startswith('IoU.')
        }
    return out


def train(cfg_path,
          work_dir,
          data_root,
          seed,
          amp_dtype=None,
          cfg_options=(),
          threads=None,
          seed_key: str = 'randomness.seed',
          checkpoint_interval=None) -> tuple:
    """tools/train.py on the toy data of ``data_root``; seconds taken.

    Args:
        cfg_path (str): the config.
        work_dir (str): the run's work dir.
        data_root (str | None): the toy dataset (and its class-embedding
            table); None: the config's own data and table.
        seed (int): the value of ``seed_key``.
        amp_dtype (str, optional): tools/train.py's ``--amp-dtype``.
        cfg_options (Sequence[str]): more ``--cfg-options``.
        threads (int, optional): the run's ``OMP_NUM_THREADS`` (default:
            this process's environment).
        seed_key (str): the config key the seed sets, ``randomness.seed``
            or e.g. ``default_hooks.sign_random.init_seed``.
        checkpoint_interval (int, optional): a checkpoint every this many
            iterations instead of the config's (how much a killed run
            loses; not what it computes, so not part of its key, as the
            data root and seed).

    Returns:
        tuple: the wall time of this attempt; the checkpoint it continued
        (:func:`unfinished_checkpoint`) or None; ``(checkpoint, run dir,
        iteration)`` of the run it started from (:func:`shared_start`) or
        None.
    """
    extra = ['--amp-dtype', amp_dtype] if amp_dtype else []
    options = [*cfg_options, f'{seed_key}={seed}']
    if checkpoint_interval:
        options.append(f'{CHECKPOINT_INTERVAL}={checkpoint_interval}')
    options += data_options(cfg_path, data_root)
    # a run whose result is not stored continues from the last checkpoint
    # of an earlier, unfinished attempt that ran exactly this (a killed
    # table, a session's end), or starts from another run's checkpoint at
    # the end of the stages both run alike (shared_start), whichever is
    # further; anything else trains from scratch, over what is left in the
    # run dir (set aside)
    resumed = unfinished_checkpoint(cfg_path, work_dir, options)
    shared = shared_start(cfg_path, work_dir, options)
    if shared and resumed and _iteration(resumed) >= shared[2]:
        shared = None  # its own attempt got as far
    elif shared:
        resumed = None
    again = '--resume' if resumed or shared else '--overwrite-checkpoints'
    if shared:
        if work_dir_checkpoints(work_dir):  # under the work dir's lock
            lock_work_dir(work_dir)
            try:
                set_aside_checkpoints(work_dir, cfg_path)
            finally:
                unlock_work_dir(work_dir)
        options.append(f'load_from={shared[0]}')
    elif resumed:  # by name: the last whole checkpoint of its own
        options.append(f'load_from={resumed}')
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'train.py'), cfg_path, '--work-dir', work_dir,
        again, *extra, '--cfg-options', *options
    ]
    record_machine(
        work_dir, shared[1] if shared else None, fresh=not (resumed or shared))
    start = time.time()
    run_tool(cmd, threads)
    return time.time() - start, resumed, shared


#: the run dir's list of the CPU types its attempts trained on, a line each
MACHINES = 'machines.txt'


@functools.lru_cache()
def cpu_type() -> str:
    """This machine's CPU model (``/proc/cpuinfo``'s ``model name``, or
    :func:`platform.processor` elsewhere). Float kernels differ between CPU
    types, so a run is repeatable on its own type only: runs are paired
    within a seed only where they trained on the same type
    (:func:`~mmseg_sign.analysis.toy_markdown.paired_values`)."""
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return ' '.join(line.split(':', 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or 'unknown'


def record_machine(work_dir: str,
                   sibling: Optional[str] = None,
                   fresh: bool = False) -> None:
    """Add this CPU type to ``work_dir``'s :data:`MACHINES` before an
    attempt trains: after the sibling's list where the run starts from a
    sibling's checkpoint (those stages ran there), anew where it trains from
    scratch, after its own where it continues an attempt of its own. The
    earlier stages of a folder trained before the record are ``unknown``
    (such a run pairs with no run that names its CPU type)."""
    lines = []
    if sibling is not None or not fresh:
        lines = machines_of(sibling if sibling is not None else work_dir) \
            or ['unknown']
    os.makedirs(work_dir, exist_ok=True)
    with open(osp.join(work_dir, MACHINES), 'w') as f:
        f.write(''.join(f'{m}\n' for m in (*lines, cpu_type())))


def machines_of(run_dir: str) -> list:
    """The CPU types ``run_dir``'s attempts trained on, in order."""
    try:
        with open(osp.join(run_dir, MACHINES)) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def other_cpu_types(todo, results: dict) -> list:
    """For each (data seed, seed) of ``todo`` (:func:`train_runs`' entries)
    whose stored runs name CPU types other than this machine's, a line
    saying so: the runs trained here will not pair with them
    (:func:`~mmseg_sign.analysis.toy_markdown.paired_values`)."""
    here, lines = cpu_type(), []
    for d, s in dict.fromkeys((d, s) for *_, d, s in todo):
        others = sorted({
            run['cpu']
            for name, run in results.items()
            if name.split('/')[1:] == [str(d), str(s)] and run.get('cpu')
            and run['cpu'] != here
        })
        if others:
            lines.append(
                f'seed {s} (data {d}) has stored runs trained on '
                f'{"; ".join(others)}; this machine is {here}: its runs of '
                'that seed will not pair with them (train a seed\'s rows on '
                'one CPU type)')
    return lines


#: what tools/train.py adds to the config it dumps in the work dir, not
#: what the run computes
_DUMP_ONLY = ('work_dir', 'launcher', 'resume', 'load_from',
              'overwrite_checkpoints')
#: how often a run keeps a checkpoint: an attempt may continue another's
#: with another interval (what is trained does not depend on it)
CHECKPOINT_INTERVAL = 'default_hooks.checkpoint.interval'


def _what_it_computes(cfg: Config, stages=None) -> str:
    """``cfg``'s text without what tools/train.py adds (:data:`_DUMP_ONLY`)
    and the checkpoint interval; with ``stages``, its plan cut to the first
    ``stages`` stages (what a run computes up to their end)."""
    cfg = copy.deepcopy(cfg)
    for key in (*_DUMP_ONLY, *COMPOSITION_KEYS):
        cfg.pop(key, None)
    *parents, leaf = CHECKPOINT_INTERVAL.split('.')
    c = cfg
    for key in parents:
        c = c.get(key, {})
    c.pop(leaf, None)
    if stages is not None:
        cfg.train_cfg.stages = list(cfg.train_cfg.stages[:stages])
    # canonical text of the values (not pretty_text: yapf takes ~0.5 s)
    return json.dumps(cfg.to_dict(), sort_keys=True, default=repr)


def _iteration(checkpoint: str) -> int:
    """The iteration of mmengine's ``iter_N.pth`` (0 for another name)."""
    found = re.fullmatch(r'iter_(\d+)\.pth', osp.basename(checkpoint))
    return int(found.group(1)) if found else 0


def _resolved(cfg_path, cfg_options=()) -> Config:
    cfg = read_config(cfg_path)
    if cfg_options:
        cfg.merge_from_dict(parse_cfg_options(cfg_options))
    return cfg


def _dataset_folders(dataset: dict) -> list:
    """The folders a dataset config reads: ``data_root`` joined with each
    ``data_prefix`` entry (a wrapper's inner ``dataset`` too)."""
    folders = []
    inner = dataset.get('dataset')
    if isinstance(inner, dict):
        folders += _dataset_folders(inner)
    root = dataset.get('data_root') or ''
    prefix = dataset.get('data_prefix') or {}
    if root or prefix:
        folders += [osp.join(root, p) for p in prefix.values() if p] or [root]
    return folders


def missing_data(cfg_path, cfg_options=()) -> list:
    """What a config's run would read and is not there: its training and
    validation folders and its class-embedding table, as ``'what: path'``
    (paths relative to the working directory, as tools/train.py reads
    them). Checked once for every config before any run starts.

    Args:
        cfg_path (str): the config.
        cfg_options (Sequence[str]): its ``--cfg-options``.

    Returns:
        list[str]: one entry per missing path.
    """
    cfg = _resolved(cfg_path, cfg_options)
    missing = []
    for loader in ('train_dataloader', 'val_dataloader'):
        dataset = (cfg.get(loader) or {}).get('dataset') or {}
        missing += [
            f'{loader} folder {path}' for path in _dataset_folders(dataset)
            if not osp.isdir(path)
        ]
    table = cfg.get('model', {}).get('decode_head', {}).get('class_embeddings')
    if isinstance(table, str) and not osp.isfile(table):
        missing.append(f'class-embedding table {table}')
    return missing


def unfinished_checkpoint(cfg_path, work_dir, cfg_options=()):
    """The last checkpoint of an unfinished attempt at this very run in
    ``work_dir``, or None: its ``last_checkpoint`` names a file that is
    there, and the config the attempt dumped equals ``cfg_path`` with
    ``cfg_options`` (data root and seed included) but for what
    tools/train.py adds (:data:`_DUMP_ONLY`) and the checkpoint interval.
    An ``--amp-dtype`` run's dump differs from its config, so such a run
    is never continued.

    Args:
        cfg_path (str): the config.
        work_dir (str): the run's work dir.
        cfg_options (Sequence[str]): the run's ``--cfg-options``.

    Returns:
        str | None: the checkpoint's path.
    """
    dumped = config_as_run(work_dir, cfg_path)
    try:
        with open(osp.join(work_dir, 'last_checkpoint')) as f:
            checkpoint = f.read().strip()
    except OSError:
        return None
    if not osp.realpath(checkpoint).startswith(
            osp.realpath(work_dir) + os.sep):
        # a copied or moved run dir: its own file of that name, never the
        # original run's
        checkpoint = osp.join(work_dir, osp.basename(checkpoint))
    if not (osp.isfile(checkpoint) and osp.isfile(dumped)):
        return None
    same = _what_it_computes(_resolved(cfg_path, cfg_options)) == \
        _what_it_computes(read_config(dumped))
    if not same:
        return None
    if not readable_checkpoint(checkpoint):  # cut short (a full disk, a
        # copy): the attempt's last whole checkpoint before it, if any
        earlier = sorted((p
                          for p in glob.glob(osp.join(work_dir, 'iter_*.pth'))
                          if _iteration_of(p) < _iteration_of(checkpoint)
                          and readable_checkpoint(p)),
                         key=_iteration_of)
        print(
            f'toy_table: {checkpoint} is truncated or damaged; ' +
            (f'continuing from {earlier[-1]}'
             if earlier else 'no earlier checkpoint: training from scratch'),
            flush=True)
        return earlier[-1] if earlier else None
    return checkpoint


def shared_start(cfg_path, work_dir, cfg_options=()):
    """Another run of the table (a sibling of ``work_dir``) that ran this
    run's first k stages alike, with a checkpoint at their end: the run
    can start there (``--resume`` from it) instead of training them again,
    e.g. SIGN + ST from SIGN + AST's checkpoint at the end of transfer
    (both train and transfer alike; seed 0 of docs/camvid.md's campaign,
    each trained from scratch, reached the same 9.35 harmonic mIoU after
    transfer). Alike: the sibling's dumped config equals this run's
    (``cfg_options``, data root and seed included) with both plans cut to
    k stages, but for what tools/train.py adds and the checkpoint interval.
    The largest such k wins; a plan outside ``train_cfg`` is never shared.

    Args:
        cfg_path (str): the config.
        work_dir (str): the run's work dir.
        cfg_options (Sequence[str]): the run's ``--cfg-options``.

    Returns:
        tuple | None: ``(checkpoint, sibling's run dir, iteration)``.
    """
    cfg = _resolved(cfg_path, cfg_options)
    stages = (cfg.get('train_cfg') or {}).get('stages')
    if not stages or len(stages) < 2:
        return None
    plan = StagePlan.from_config(cfg)
    ends = [plan.start(k) for k in range(1, len(plan))]  # k stages done
    table = osp.dirname(osp.abspath(work_dir))
    best, texts = None, {}
    for name in sorted(os.listdir(table)):
        other = osp.join(table, name)
        if other == osp.abspath(work_dir) or not osp.isdir(other):
            continue
        record = config_as_run(other)
        if record is None:
            continue
        for k in range(len(ends), 0, -1):
            checkpoint = osp.join(other, f'iter_{ends[k - 1]}.pth')
            if best is not None and ends[k - 1] <= best[2] or \
                    not readable_checkpoint(checkpoint):
                continue  # none, or cut short: a shorter start, or none
            try:
                ran = read_config(record)
                ran_stages = ran.train_cfg.stages
            except Exception:  # not a run's config: not a sibling
                break
            if len(ran_stages) <= k:
                continue  # the checkpoint would be its end, not a start
            if k not in texts:
                texts[k] = _what_it_computes(cfg, k)
            if _what_it_computes(ran, k) == texts[k]:
                best = (checkpoint, other, ends[k - 1])
                break
    return best


# not used to segment: G, D and the fixed class-embedding table
NOT_INFERENCE = ('decode_head.generator.', 'decode_head.discriminator.',
                 'decode_head.class_embedding')


def param_counts(work_dir: str) -> dict:
    """Parameters in a finished run's last checkpoint: ``sim``, the SIM
    (the neck without E's ASPP ``neck.input_proj``: encoder, positional
    encoding, latent head; the paper's Table 2), and ``model``, everything
    but G, D and the class-embedding table (E, SIM, C; Table 4 compares
    models of about the same count).

    Args:
        work_dir (str): the run's work dir.

    Returns:
        dict[str, int]: ``{'sim': ..., 'model': ...}``.
    """
    with open(osp.join(work_dir, 'last_checkpoint')) as f:
        state = torch.load(
            f.read().strip(), map_location='cpu',
            weights_only=False)['state_dict']
    counts = dict(sim=0, model=0)
    for name, value in state.items():
        if not value.is_floating_point() or name.startswith(NOT_INFERENCE):
            continue
        counts['model'] += value.numel()
        if name.startswith(
                'neck.') and not name.startswith('neck.input_proj.'):
            counts['sim'] += value.numel()
    return {k: int(v) for k, v in counts.items()}


#: the ``data_seed`` of runs on the configs' own data (``--data config``)
OWN_DATA = 'own'
#: the toy tables' test images: larger than the 64x64 crops (the PE study)
TOY_VAL_SIZE = (96, 96)


def run_dir_name(stem: str, data_seed, seed: int) -> str:
    """A run's folder in the table's work dir: ``STEM_data{DATA_SEED}_seed
    {SEED}`` on toy data, ``STEM_seed{SEED}`` on the configs' own."""
    if data_seed == OWN_DATA:
        return f'{stem}_seed{seed}'
    return f'{stem}_data{data_seed}_seed{seed}'


def toy_data(wd: str, data_seed: int):
    """The table's toy data of one data seed, made on first use.

    Args:
        wd (str): the table's work dir.
        data_seed (int | str): ``make_toy_dataset``'s seed; :data:`OWN_DATA`:
            the configs' own data (nothing made).

    Returns:
        str | None: its data root, ``WD/data{DATA_SEED}`` (None for the
        configs' own data).
    """
    if data_seed == OWN_DATA:
        return None
    data_root = osp.join(wd, f'data{data_seed}')
    if not osp.exists(osp.join(data_root, 'class_embeddings.npz')):
        make_toy_dataset(data_root, val_size=TOY_VAL_SIZE, seed=data_seed)
    else:  # made by an earlier command: of this seed, or refused
        check_toy_data(data_root, data_seed, TOY_VAL_SIZE)
    return data_root


def run(cfg_path,
        wd,
        data_seed,
        seed,
        amp_dtype=None,
        cfg_options=(),
        tag=None,
        threads=None,
        seed_key: str = 'randomness.seed',
        checkpoint_interval=None) -> dict:
    """One run's metrics at each stage end, its time and neck size.

    Args:
        cfg_path (str): the config.
        wd (str): the table's work dir (toy data in ``data{DATA_SEED}``,
            the run in :func:`run_dir_name`).
        data_seed (int | str): the toy data's seed, or :data:`OWN_DATA`.
        seed (int): the training seed.
        amp_dtype (str, optional): tools/train.py's ``--amp-dtype``.
        cfg_options (Sequence[str]): more ``--cfg-options``.
        tag (str, optional): :func:`row_stem`'s.
        threads (int, optional): :func:`train`'s.
        seed_key (str): :func:`train`'s.
        checkpoint_interval (int, optional): :func:`train`'s.

    Returns:
        dict: ``seconds``, ``params`` (:func:`param_counts`),
        ``started_from`` (``SIBLING/iter_N.pth``, where it started from
        another run's stages, :func:`shared_start`: its ``seconds`` are
        its own stages', its results of the shared stages the sibling's),
        ``resumed_from`` (the checkpoint's file name, where the run
        continued an unfinished attempt: its ``seconds`` are then the last
        attempt's) and per stage ``{mIoU_seen, mIoU_unseen, hIoU, mIoU}``
        (with their ``_boot_sd`` where the metric bootstraps, and
        ``IoU.CLASS`` where it gives them).
    """
    data_root = toy_data(wd, data_seed)
    stem = row_stem(cfg_path, amp_dtype, tag)
    run_dir = osp.join(wd, run_dir_name(stem, data_seed, seed))
    seconds, resumed, shared = train(cfg_path, run_dir, data_root, seed,
                                     amp_dtype, cfg_options, threads, seed_key,
                                     checkpoint_interval)
    records = logged_records(run_dir, 'hIoU')
    out = dict(seconds=seconds, params=param_counts(run_dir))
    # the CPU type(s) it trained on: a pair is formed on one type only
    out['cpu'] = ' + '.join(dict.fromkeys(machines_of(run_dir)))
    if resumed:  # its seconds are the last attempt's
        out['resumed_from'] = osp.basename(resumed)
    if shared:  # the shared stages' validations are the sibling's
        checkpoint, other, iteration = shared
        out['started_from'] = f'{osp.basename(other)}/' \
            f'{osp.basename(checkpoint)}'
        own = records
        records = {
            i: r
            for i, r in logged_records(other, 'hIoU').items() if i <= iteration
        }
        records.update({i: r for i, r in own.items() if i > iteration})
    test = score_test_split(cfg_path, run_dir, data_root, cfg_options, shared,
                            threads)
    if test:  # CamVid's test photographs, scored after training
        out['test'] = test
    # the plan as run (--cfg-options included): the last attempt's config
    for stage, end in stage_ends(config_as_run(run_dir, cfg_path)).items():
        record = records[end if end is not None else max(records)]
        out[stage] = {k: record[k] for k in KEYS}
        # the mIoU of every class and, with GZSLIoUMetric(per_class=True),
        # each class's IoU (the supervised ceiling's criteria)
        out[stage].update({
            k: v
            for k, v in record.items() if k == 'mIoU' or k.startswith('IoU.')
        })
        # each score's sd over resamples of the test images, where the
        # metric has them (GZSLIoUMetric(bootstrap=B), the toy data's)
        out[stage].update({
            f'{k}_boot_sd': record[f'{k}_boot_sd']
            for k in KEYS if f'{k}_boot_sd' in record
        })
    return out


def score_stored_runs(runs, wd: str, results: dict, amp_dtype=None) -> list:
    """:func:`score_test_split` of the stored runs of ``runs`` that have no
    test metrics, from the checkpoints in their run folders (a run trained
    before runs were scored as they end; one whose folder is gone is left
    as it is), each stored as it is scored.

    Args:
        runs (Sequence[tuple]): :func:`train_runs`' ``todo`` entries.
        wd (str): the table's work dir.
        results (dict): the stored runs, updated in place.
        amp_dtype (str, optional): :func:`row_stem`'s.

    Returns:
        list[str]: the names of the runs scored.
    """
    path = osp.join(wd, 'results.json')
    scored = []
    for c, tag, options, d, s in runs:
        stem = row_stem(c, amp_dtype, tag)
        name = f'{stem}/{d}/{s}'
        run_dir = osp.join(wd, run_dir_name(stem, d, s))
        stored = results.get(name)
        if not stored or stored.get('test') or not osp.isdir(run_dir):
            continue
        shared = None
        if stored.get('started_from'):
            sibling, _, ckpt = stored['started_from'].partition('/')
            shared = (osp.join(wd, sibling,
                               ckpt), osp.join(wd,
                                               sibling), _iteration_of(ckpt))
        data_root = None if d == OWN_DATA else osp.join(wd, f'data{d}')
        test = score_test_split(c, run_dir, data_root, options, shared)
        if test:
            result = dict(stored, test=test)
            keep_run(run_dir, name, result)
            results.update(record_run(path, name, result))
            scored.append(name)
    return scored


def train_runs(todo,
               wd: str,
               results: dict,
               amp_dtype=None,
               jobs: int = 1,
               seed_key: str = 'randomness.seed',
               checkpoint_interval=None) -> list:
    """Trains runs ``jobs`` at a time (each with ``OMP_NUM_THREADS`` =
    cores / jobs unless set), adding each to ``results`` and writing
    ``WD/results.json`` as it ends.

    Args:
        todo (Sequence[tuple]): ``(config, tag, cfg_options, data_seed,
            seed)`` per run.
        wd (str): the table's work dir.
        results (dict): ``{STEM/DATA_SEED/SEED: run}``, updated in place
            (with the runs other processes stored meanwhile, too).
        amp_dtype (str, optional): :func:`train`'s.
        jobs (int): runs at once.
        seed_key (str): :func:`train`'s.
        checkpoint_interval (int, optional): :func:`train`'s.

    Returns:
        list[str]: ``'NAME: error'`` of each run that failed (the others
        are kept, each with its ``key``: :func:`run_key`).
    """
    for data_seed in sorted({t[3] for t in todo}):
        toy_data(wd, data_seed)  # made once, before runs share it
    threads = None
    if jobs > 1 and 'OMP_NUM_THREADS' not in os.environ:
        threads = max(1, (os.cpu_count() or 1) // jobs)
    path = osp.join(wd, 'results.json')
    # what each run runs (run_key), here: reading configs is not
    # thread-safe (mmengine resolves `mmseg::` bases through pkg_resources)
    keys = {(c, tuple(o)): run_key(c, amp_dtype, o, seed_key)
            for c, _, o, _, _ in todo}
    for c, *_ in todo:
        takes_class_table(c)  # cached before the threads ask
    failed = []
    starts = start_siblings(todo, checkpoint_interval)
    pending, running, ended = list(range(len(todo))), {}, set()
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        while pending or running:
            # in order, each run once the run it starts from has ended
            # (its checkpoint at their shared stages' end is there)
            for i in [
                    i for i in pending
                    if starts.get(i, i) in ended or i not in starts
            ][:max(1, jobs) - len(running)]:
                pending.remove(i)
                c, tag, options, d, s = todo[i]
                future = pool.submit(run, c, wd, d, s, amp_dtype, options, tag,
                                     threads, seed_key, checkpoint_interval)
                running[future] = (i, f'{row_stem(c, amp_dtype, tag)}/{d}/{s}',
                                   keys[c, tuple(options)],
                                   osp.join(
                                       wd,
                                       run_dir_name(
                                           row_stem(c, amp_dtype, tag), d, s)))
            future = next(iter(wait(running, return_when=FIRST_COMPLETED)[0]))
            i, name, key, run_dir = running.pop(future)
            ended.add(i)
            if future.exception() is not None:
                failed.append(f'{name}: {future.exception()}')
                continue
            result = dict(future.result(), key=key)
            try:
                # first beside the run (a few bytes), so that a results
                # file that cannot be written loses nothing
                keep_run(run_dir, name, result)
                results.update(record_run(path, name, result))
            except (OSError, ValueError) as err:
                failed.append(
                    f'{name}: trained, but not stored in {path} ({err}); '
                    f'its result is kept in {osp.join(run_dir, RUN_RESULT)}'
                    ' and the next command on this work dir stores it (no '
                    'retraining)')
                continue
            print(name, json.dumps(results[name]), flush=True)
    return failed


def start_siblings(todo, checkpoint_interval=None) -> dict:
    """Which run each run of ``todo`` can start from (:func:`shared_start`):
    an earlier run of the same seeds whose config equals its own up to the
    end of its first k stages (the largest k), runs past them and keeps a
    checkpoint there, e.g. SIGN + ST from SIGN + AST, ZS3 + AST from
    ZS3 + ST. :func:`train_runs` starts a run once that run has ended, and
    the others meanwhile.

    Args:
        todo (Sequence[tuple]): :func:`train_runs`'s.
        checkpoint_interval (int, optional): :func:`train_runs`'s (else
            each config's own).

    Returns:
        dict[int, int]: ``{run index: index of the run it starts from}``.
    """
    cfgs = [_resolved(c, o) for c, _, o, _, _ in todo]
    plans = [StagePlan.from_config(cfg) for cfg in cfgs]
    intervals = [
        checkpoint_interval
        or cfg.get('default_hooks', {}).get('checkpoint', {}).get('interval')
        for cfg in cfgs
    ]
    texts = {}

    def text(i, k):
        if (i, k) not in texts:
            texts[i, k] = _what_it_computes(cfgs[i], k)
        return texts[i, k]

    starts = {}
    for i, (_, _, _, d, s) in enumerate(todo):
        plan = plans[i]
        if plan is None or len(plan) < 2:
            continue
        best = None
        for j in range(i):
            other = plans[j]
            if other is None or todo[j][3:] != (d, s):
                continue
            for k in range(len(plan) - 1, 0, -1):
                if len(other) > k and (best is None or k > best[1]) and \
                        other.start(k) == plan.start(k) and \
                        intervals[j] and other.start(k) % intervals[j] == 0 \
                        and text(i, k) == text(j, k):
                    best = (j, k)
                    break
        if best is not None:
            starts[i] = best[0]
    return starts


def row_stem(cfg_path: str, amp_dtype=None, tag=None) -> str:
    """A config's name in the results: its file stem, ``+DTYPE`` with
    mixed precision, ``+TAG`` for runs told apart by ``--cfg-options``.

    Args:
        cfg_path (str): the config.
        amp_dtype (str, optional): its run's ``--amp-dtype``.
        tag (str, optional): e.g. ``'T2'`` for a temperature.

    Returns:
        str: the name, e.g. ``'sign_toy+bfloat16+T2'``.
    """
    stem = osp.splitext(osp.basename(cfg_path))[0]
    return '+'.join(x for x in (stem, amp_dtype, tag) if x)


def foreign_runs(results: dict,
                 todo,
                 amp_dtype=None,
                 seed_key: str = 'randomness.seed') -> list:
    """The stored runs that ``todo`` would take for its own but that ran
    something else (:func:`run_key`; runs stored before keys existed are
    taken as they are).

    Args:
        results (dict): the stored runs.
        todo (Sequence[tuple]): ``(config, tag, cfg_options, data_seed,
            seed)`` per run.
        amp_dtype (str, optional): ``--amp-dtype``.
        seed_key (str): :func:`train`'s.

    Returns:
        list[str]: ``'NAME (config CFG)'`` of each mismatch.
    """
    found = []
    for c, tag, options, d, s in todo:
        name = f'{row_stem(c, amp_dtype, tag)}/{d}/{s}'
        stored = results.get(name, {}).get('key')
        if stored is not None and stored != run_key(c, amp_dtype, options,
                                                    seed_key):
            found.append(f'{name} (config {c})')
    return found


@functools.lru_cache(maxsize=None)
def takes_class_table(cfg_path: str) -> bool:
    """Whether the config's head reads a class-embedding table (a zero-shot
    head's ``class_embeddings``; mmseg's FCN has none). Cached: the runs
    ask from worker threads, and reading a config is not thread-safe
    (:func:`train_runs` asks first, in the main thread)."""
    return bool(config_value(cfg_path, 'model.decode_head.class_embeddings'))


def _argument_default(module_cfg, name: str):
    """The default of argument ``name`` of the model module that
    ``module_cfg`` (a dict with a registered ``type``) builds; None where
    it has no such argument or no default."""
    if not isinstance(module_cfg, dict) or \
            not isinstance(module_cfg.get('type'), str):
        return None
    import inspect

    from mmseg.registry import MODELS

    import mmseg_sign  # noqa: F401 (registers the project's modules)
    cls = MODELS.get(module_cfg['type'])
    if cls is None:
        return None
    param = inspect.signature(cls.__init__).parameters.get(name)
    if param is None or param.default is inspect.Parameter.empty:
        return None
    return param.default


def config_value(cfg_path: str, key: str):
    """A config's value at a dotted ``--cfg-options`` key (list items by
    index, e.g. ``train_cfg.stages.2.temperature``).

    Args:
        cfg_path (str): the config.
        key (str): the dotted key.

    Returns:
        The value (``None`` where the key is absent). A stage option the
        plan leaves at its default (``train_cfg.stages.1.synth_weight``)
        has that default, as has an argument a model module's config
        leaves at its default (``model.decode_head.loss_kld_weight``:
        SIGNHead's 100).
    """
    from ..structures.stage_plan import STAGE_OPTIONS
    node = read_config(cfg_path)
    parts = key.split('.')
    for i, part in enumerate(parts):
        try:
            node = node[int(part)] if isinstance(node, (list, tuple)) \
                else node[part]
        except (KeyError, IndexError, ValueError, TypeError):
            # a stage option not written in the plan: its default
            if parts[:2] == ['train_cfg', 'stages'] and i == 3 and \
                    len(parts) == 4 and isinstance(node, dict):
                return STAGE_OPTIONS.get(node.get('name'), {}).get(part)
            # an argument a model module's config leaves at its default
            if parts[0] == 'model' and i == len(parts) - 1:
                return _argument_default(node, part)
            return None
    return node


def sweep_points(spec: str) -> list:
    """The runs of a sweep ``KEY=V1,V2,...``: a tag and the
    ``--cfg-options`` item for each value. Every value gets its own runs,
    the config's own value included, so that the points of a curve are
    trained together, under the same settings (the thread count changes a
    run's floating-point sums).

    Args:
        spec (str): e.g. ``'train_cfg.stages.2.temperature=0.1,2'``.

    Returns:
        list[tuple[float, str, list[str]]]: ``(value, tag, cfg_options)``,
        tags like ``'temperature2'``.

    Raises:
        ValueError: a spec without ``=``, values or numbers.
    """
    key, _, values = spec.partition('=')
    if not key or not values:
        raise ValueError(f'--sweep {spec!r}: write KEY=V1,V2,... (e.g. '
                         'train_cfg.stages.2.temperature=0.1,1,10)')
    leaf = key.rsplit('.', 1)[-1]
    points = []
    for text in values.split(','):
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f'--sweep {spec!r}: {text!r} is not a number '
                             '(a sweep is plotted against its values)')
        if any(value == p[0] for p in points):
            raise ValueError(f'--sweep {spec!r}: {text!r} repeats a value '
                             '(values compare as numbers: 1 = 1.0)')
        points.append((value, f'{leaf}{text}', [f'{key}={text}']))
    return points
