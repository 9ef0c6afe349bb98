"""Toy tables' runs: shipped configs trained with tools/train.py on the
built-in toy data (or their own) over training seeds and toy data seeds
(``tools/toy_table.py``, docs/toy_results.md). Where a run starts is
:mod:`.run_starts`, what its folder records :mod:`.run_records`, what a
config says :mod:`.toy_configs`; the markdown is :mod:`.toy_markdown`, the
results file :mod:`.toy_results`."""
import glob
import json
import os
import os.path as osp
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from ..structures.stage_plan import StagePlan
from ..utils.work_dir_lock import (lock_work_dir, set_aside_checkpoints,
                                   unlock_work_dir, work_dir_checkpoints,
                                   work_dir_holder)
from .logs import logged_records
from .run_records import (checkpoint_iteration, config_as_run, machines_of,
                          param_counts, readable_checkpoint, record_machine)
from .run_starts import (CHECKPOINT_INTERVAL, shared_start, start_siblings,
                         unfinished_checkpoint)
from .toy_configs import (data_options, dataset_folders, flat_options,
                          resolved_config, row_stem, stage_ends,
                          takes_class_table)
from .toy_data import check_toy_data, make_toy_dataset
from .toy_markdown import KEYS
from .toy_results import RUN_RESULT, keep_run, record_run, run_key

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
        data_root (str | None): :func:`.toy_configs.data_options`'.
        cfg_options (Sequence[str]): the run's ``--cfg-options``.
        shared (tuple, optional): :func:`.run_starts.shared_start`'s, where
            the run started from a sibling.
        threads (int, optional): the test's ``OMP_NUM_THREADS``.

    Returns:
        dict: ``{stage: metrics}`` (empty without a ``test_split``).
    """
    cfg = resolved_config(cfg_path, cfg_options)
    split = cfg.get('test_split')
    if not split:
        return {}
    options = [
        *cfg_options, *data_options(cfg_path, data_root),
        *flat_options('test_dataloader.dataset', split)
    ]
    tested = resolved_config(cfg_path, options).test_dataloader.dataset
    missing = [p for p in dataset_folders(tested) if not osp.isdir(p)]
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
                checkpoint_iteration(p)
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


def run_options(cfg_path,
                data_root,
                seed: int,
                cfg_options=(),
                seed_key: str = 'randomness.seed',
                checkpoint_interval=None) -> list:
    """A run's ``--cfg-options``: ``cfg_options``, its seed, the checkpoint
    interval and its data (:func:`train`'s arguments)."""
    options = [*cfg_options, f'{seed_key}={seed}']
    if checkpoint_interval:
        options.append(f'{CHECKPOINT_INTERVAL}={checkpoint_interval}')
    return options + data_options(cfg_path, data_root)


def start_of(cfg_path, work_dir, options) -> tuple:
    """Where a run whose result is not stored starts: from the last
    checkpoint of an earlier, unfinished attempt that ran exactly this (a
    killed table, a session's end), or from another run's checkpoint at
    the end of the stages both run alike, whichever is further; else from
    scratch, over what is left in the run dir (set aside).

    Returns:
        tuple: :func:`.run_starts.unfinished_checkpoint`'s checkpoint and
        :func:`.run_starts.shared_start`'s triple, at most one of them not
        None.
    """
    resumed = unfinished_checkpoint(cfg_path, work_dir, options)
    shared = shared_start(cfg_path, work_dir, options)
    if shared and resumed and checkpoint_iteration(resumed) >= shared[2]:
        shared = None  # its own attempt got as far
    elif shared:
        resumed = None
    return resumed, shared


def reaches_plan_end(cfg_path, options, checkpoint) -> bool:
    """Whether ``checkpoint`` is at the end of the run's plan (the SIGN
    stage plan, or ``train_cfg.max_iters`` without one): tools/train.py
    ``--resume`` from it would have nothing left to train (and refuses,
    ResumeCheckHook).

    Args:
        cfg_path (str): the config.
        options (Sequence[str]): the run's ``--cfg-options``.
        checkpoint (str): an ``iter_N.pth`` of the run.
    """
    cfg = resolved_config(cfg_path, options)
    plan = StagePlan.from_config(cfg)
    end = plan.total_iters if plan is not None else \
        (cfg.get('train_cfg') or {}).get('max_iters')
    return end is not None and checkpoint_iteration(checkpoint) >= end


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
        (:func:`.run_starts.unfinished_checkpoint`) or None;
        ``(checkpoint, run dir, iteration)`` of the run it started from
        (:func:`.run_starts.shared_start`) or None.
    """
    extra = ['--amp-dtype', amp_dtype] if amp_dtype else []
    options = run_options(cfg_path, data_root, seed, cfg_options, seed_key,
                          checkpoint_interval)
    resumed, shared = start_of(cfg_path, work_dir, options)
    if resumed and reaches_plan_end(cfg_path, options, resumed):
        # trained to its end, stopped before it was stored (in its
        # test-split scoring, by a session's end): only scored and stored
        return 0.0, resumed, None
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
        tag (str, optional): :func:`.toy_configs.row_stem`'s.
        threads (int, optional): :func:`train`'s.
        seed_key (str): :func:`train`'s.
        checkpoint_interval (int, optional): :func:`train`'s.

    Returns:
        dict: ``seconds``, ``params`` (:func:`.run_records.param_counts`),
        ``started_from`` (``SIBLING/iter_N.pth``, where it started from
        another run's stages, :func:`.run_starts.shared_start`: its
        ``seconds`` are its own stages', its results of the shared stages
        the sibling's),
        ``resumed_from`` (the checkpoint's file name, where the run
        continued an unfinished attempt: its ``seconds`` are then the last
        attempt's, 0 where the attempt had trained to its end and was
        stopped before it was stored) and per stage
        ``{mIoU_seen, mIoU_unseen, hIoU, mIoU}``
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
        amp_dtype (str, optional): :func:`.toy_configs.row_stem`'s.

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
            shared = (osp.join(wd, sibling, ckpt), osp.join(wd, sibling),
                      checkpoint_iteration(ckpt))
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
        are kept, each with its ``key``: :func:`.toy_results.run_key`).
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


def planned_starts(todo,
                   wd: str,
                   amp_dtype=None,
                   seed_key: str = 'randomness.seed',
                   checkpoint_interval=None) -> list:
    """What :func:`train_runs` would do with ``todo``, in its order: each
    run's name and where it would start (``--dry-run``); nothing is made,
    trained or written.

    Args:
        todo (Sequence[tuple]): :func:`train_runs`'s.
        wd (str): the table's work dir.
        amp_dtype (str, optional): :func:`train`'s.
        seed_key (str): :func:`train`'s.
        checkpoint_interval (int, optional): :func:`train`'s.

    Returns:
        list[str]: ``'NAME: how it starts'`` per run.
    """
    starts = start_siblings(todo, checkpoint_interval)
    names = [
        f'{row_stem(c, amp_dtype, tag)}/{d}/{s}' for c, tag, _, d, s in todo
    ]
    lines = []
    for i, (c, tag, options, d, s) in enumerate(todo):
        run_dir = osp.join(wd, run_dir_name(row_stem(c, amp_dtype, tag), d, s))
        holder = work_dir_holder(run_dir)
        if holder:
            lines.append(f'{names[i]}: training now ({holder.split(":")[0]})')
            continue
        if osp.exists(osp.join(run_dir, RUN_RESULT)):
            lines.append(f'{names[i]}: finished: its result, kept in its '
                         'folder, is stored without training')
            continue
        data_root = None if d == OWN_DATA else osp.join(wd, f'data{d}')
        run_opts = run_options(c, data_root, s, options, seed_key,
                               checkpoint_interval)
        resumed, shared = start_of(c, run_dir, run_opts)
        if i in starts:
            how = (f'after {names[starts[i]]} ends, from its checkpoint '
                   'at the end of the stages they run alike')
            if resumed:
                how += (f' (or its own {osp.basename(resumed)} if that '
                        'is further)')
        elif shared:
            how = (f'from {osp.basename(shared[1])}/'
                   f'{osp.basename(shared[0])} (the stages they run alike)')
        elif resumed and reaches_plan_end(c, run_opts, resumed):
            how = (f'trained to its end ({osp.basename(resumed)}): only '
                   'scored on the test split and stored')
        elif resumed:
            how = f'continues its own {osp.basename(resumed)}'
        else:
            how = 'from scratch'
        lines.append(f'{names[i]}: {how}')
    return lines


def foreign_runs(results: dict,
                 todo,
                 amp_dtype=None,
                 seed_key: str = 'randomness.seed') -> list:
    """The stored runs that ``todo`` would take for its own but that ran
    something else (:func:`.toy_results.run_key`; runs stored before keys
    existed are taken as they are).

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
