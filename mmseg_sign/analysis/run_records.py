"""What a toy table run's folder records: the config of its last attempt,
its checkpoints, the CPU types it trained on and its parameter counts."""
import functools
import glob
import os
import os.path as osp
import platform
import re
import zipfile
from typing import Optional

import torch


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


def checkpoint_iteration(path: str) -> int:
    """The iteration N of mmengine's ``iter_N.pth`` (-1 for another
    name)."""
    match = re.search(r'iter_(\d+)\.pth$', path)
    return int(match.group(1)) if match else -1


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
    """For each (data seed, seed) of ``todo``
    (:func:`.toy_table.train_runs`' entries) whose stored runs name CPU
    types other than this machine's, a line saying so: the runs trained
    here will not pair with them
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
