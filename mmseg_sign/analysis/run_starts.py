"""Where a toy table run starts: from its own unfinished attempt's last
checkpoint, or from a sibling run's checkpoint at the end of the stages both
run alike (a shared start), or from scratch."""
import copy
import glob
import json
import os
import os.path as osp

from mmengine.config import Config

from ..structures.stage_plan import StagePlan
from .run_records import (checkpoint_iteration, config_as_run,
                          readable_checkpoint)
from .toy_configs import read_config, resolved_config
from .toy_results import COMPOSITION_KEYS

#: what tools/train.py adds to the config it dumps in the work dir, not
#: what the run computes
_DUMP_ONLY = ('work_dir', 'launcher', 'resume', 'load_from',
              'overwrite_checkpoints')

#: how often a run keeps a checkpoint: an attempt may continue another's
#: with another interval (what is trained does not depend on it)
CHECKPOINT_INTERVAL = 'default_hooks.checkpoint.interval'


def what_it_computes(cfg: Config, stages=None) -> str:
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
    same = what_it_computes(resolved_config(cfg_path, cfg_options)) == \
        what_it_computes(read_config(dumped))
    if not same:
        return None
    if not readable_checkpoint(checkpoint):  # cut short (a full disk, a
        # copy): the attempt's last whole checkpoint before it, if any
        earlier = sorted(
            (p for p in glob.glob(osp.join(work_dir, 'iter_*.pth'))
             if checkpoint_iteration(p) < checkpoint_iteration(checkpoint)
             and readable_checkpoint(p)),
            key=checkpoint_iteration)
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
    cfg = resolved_config(cfg_path, cfg_options)
    stages = (cfg.get('train_cfg') or {}).get('stages')
    if not stages or len(stages) < 2:
        return None
    plan = StagePlan.from_config(cfg)
    ends = [plan.start(k) for k in range(1, len(plan))]  # k stages done
    table = osp.dirname(osp.abspath(work_dir))
    best, texts = None, {}
    # (no table folder yet, e.g. a dry run's: no sibling)
    for name in sorted(os.listdir(table) if osp.isdir(table) else ()):
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
                texts[k] = what_it_computes(cfg, k)
            if what_it_computes(ran, k) == texts[k]:
                best = (checkpoint, other, ends[k - 1])
                break
    return best


def start_siblings(todo, checkpoint_interval=None) -> dict:
    """Which run each run of ``todo`` can start from (:func:`shared_start`):
    an earlier run of the same seeds whose config equals its own up to the
    end of its first k stages (the largest k), runs past them and keeps a
    checkpoint there, e.g. SIGN + ST from SIGN + AST, ZS3 + AST from
    ZS3 + ST. :func:`.toy_table.train_runs` starts a run once that run has
    ended, and the others meanwhile.

    Args:
        todo (Sequence[tuple]): :func:`.toy_table.train_runs`'s.
        checkpoint_interval (int, optional):
            :func:`.toy_table.train_runs`'s (else each config's own).

    Returns:
        dict[int, int]: ``{run index: index of the run it starts from}``.
    """
    cfgs = [resolved_config(c, o) for c, _, o, _, _ in todo]
    plans = [StagePlan.from_config(cfg) for cfg in cfgs]
    intervals = [
        checkpoint_interval
        or cfg.get('default_hooks', {}).get('checkpoint', {}).get('interval')
        for cfg in cfgs
    ]
    texts = {}

    def text(i, k):
        if (i, k) not in texts:
            texts[i, k] = what_it_computes(cfgs[i], k)
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
