"""fp32 against mixed precision on the toy benchmark: the full SIGN plan of
``tools/toy_ablation.py`` (train, transfer, AST) per precision, training
seed and toy data seed.

    python tools/analysis/toy_precision.py --precisions bfloat16 float16 \\
        --seeds 0 1 2 --data-seeds 0 1 [--work-dir work_dirs/toy_precision]

``float32`` trains without ``--amp``; ``bfloat16`` / ``float16`` with
``--amp --amp-dtype DTYPE``. Each run's metrics (after transfer and after
AST), its wall time and final ``loss_kld`` go to ``WORK_DIR/results.json``
as soon as it ends (a run already there is skipped, so the command can be
repeated or extended); the table of mean ± std per precision and data seed
is printed at the end. The toy data are ``toy_ablation``'s
(``make_toy_dataset(val_size=(96, 96), seed=DATA_SEED)``), so the float32
rows match ``docs/toy_results.md``.
"""
import argparse
import json
import os
import os.path as osp
import sys

import numpy as np

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, osp.join(REPO, 'tools'))
from toy_ablation import (KEYS, SELF_TRAIN, TRAIN, TRANSFER,  # noqa
                          TRANSFER_STAGE, fmt, kld_curve, stage_body, train,
                          val_metrics, write_config)

PRECISIONS = ('float32', 'bfloat16', 'float16')


def plan_body(plan):
    """toy_ablation's full plan (train, transfer, AST) with the stage
    lengths ``plan``."""
    train_iters, transfer_iters, st_iters = plan
    return stage_body([
        dict(name='train', iters=train_iters),
        dict(TRANSFER_STAGE, iters=transfer_iters,
             block_iters=min(TRANSFER_STAGE['block_iters'],
                             max(1, transfer_iters // 2))),
        dict(name='self_train', iters=st_iters, mode='AST', temperature=0.2,
             candidates='predicted_unseen')
    ])


def run_one(wd, precision, data_seed, seed, plan=(TRAIN, TRANSFER,
                                                   SELF_TRAIN)):
    data_root = osp.join(wd, f'data{data_seed}')
    if not osp.exists(osp.join(data_root, 'class_embeddings.npz')):
        sys.path.insert(0, REPO)
        from mmseg_sign.datasets.toy_data import make_toy_dataset
        make_toy_dataset(data_root, val_size=(96, 96), seed=data_seed)
    cfg = osp.join(wd, f'ast_data{data_seed}.py')
    write_config(cfg, data_root, plan_body(plan))
    run = osp.join(wd, f'{precision}_data{data_seed}_seed{seed}')
    extra = [] if precision == 'float32' else ['--amp-dtype', precision]
    seconds = train(cfg, run, seed, extra_args=extra)
    m = val_metrics(run)
    kld = kld_curve(run)
    return dict(seconds=seconds, transfer=m[plan[0] + plan[1]],
                ast=m[sum(plan)],
                final_loss_kld=kld[max(kld)] if kld else None)


def table(results):
    lines = ['| precision | data seed | runs | harmonic per seed: transfer '
             '→ AST | after transfer (seen / unseen / harmonic) | after AST '
             '(seen / unseen / harmonic) | s per run |',
             '|---|---|---|---|---|---|---|']
    groups = {}
    for key, value in results.items():
        precision, data_seed, seed = key.split('/')
        groups.setdefault((precision, int(data_seed)), []).append(
            (int(seed), value))
    for (precision, data_seed), runs in sorted(
            groups.items(), key=lambda g: (g[0][1], PRECISIONS.index(
                g[0][0]))):
        runs.sort(key=lambda r: r[0])
        vals = [v for _, v in runs]
        per_seed = '; '.join(f'{s}: {v["transfer"]["hIoU"]:.1f} → '
                             f'{v["ast"]["hIoU"]:.1f}' for s, v in runs)
        lines.append(
            f'| {precision} | {data_seed} | {len(runs)} | {per_seed} | ' +
            ' / '.join(fmt([v['transfer'][k] for v in vals]) for k in KEYS)
            + ' | ' +
            ' / '.join(fmt([v['ast'][k] for v in vals]) for k in KEYS) +
            f' | {np.mean([v["seconds"] for v in vals]):.0f} |')
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--precisions', nargs='+', default=list(PRECISIONS),
                        choices=PRECISIONS)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--data-seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--work-dir', default='work_dirs/toy_precision')
    parser.add_argument('--plan', type=int, nargs=3,
                        default=[TRAIN, TRANSFER, SELF_TRAIN],
                        metavar=('TRAIN', 'TRANSFER', 'SELF_TRAIN'),
                        help='stage lengths (a rehearsal: 2 2 2)')
    args = parser.parse_args()
    wd = osp.abspath(args.work_dir)
    os.makedirs(wd, exist_ok=True)
    path = osp.join(wd, 'results.json')
    results = {}
    if osp.exists(path):
        with open(path) as f:
            results = json.load(f)
    for data_seed in args.data_seeds:
        for precision in args.precisions:
            for seed in args.seeds:
                key = f'{precision}/{data_seed}/{seed}'
                if key in results:
                    continue
                results[key] = run_one(wd, precision, data_seed, seed,
                                       tuple(args.plan))
                with open(path, 'w') as f:
                    json.dump(results, f, indent=1)
                print(key, json.dumps(results[key]['ast']), flush=True)
    print(table(results))


if __name__ == '__main__':
    main()
