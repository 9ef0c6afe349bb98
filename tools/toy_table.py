"""Shipped configs on the built-in toy data, over training seeds and toy
data seeds, as one markdown table (docs/toy_results.md).

    python tools/toy_table.py configs/baselines/spnet_toy.py \\
        configs/sign/sign_toy.py --seeds 0 1 2 --data-seeds 0 1 2 \\
        [--rows 'SIGN + AST=sign_toy@self_train' ...] [--amp-dtype bfloat16] \\
        [--cfg-options KEY=VALUE ...] [--work-dir work_dirs/toy_table] \\
        [--out table.md]

Each config runs once per (data seed, training seed) with tools/train.py
on ``make_toy_dataset(val_size=(96, 96), seed=DATA_SEED)`` (50 test images
of 96×96, larger than the 64×64 training crops, as in the paper's PE
study). A row is a config after one of its stages (the validation at the
stage's end; a config without a stage plan: its last validation), named
``STEM@STAGE`` or by ``--rows LABEL=STEM@STAGE`` (which also orders them);
with ``--amp-dtype DTYPE`` (tools/train.py's) the stem is ``STEM+DTYPE``.
``--cfg-options`` go to every run (e.g. a shorter plan for a rehearsal).
Each run's metrics go to ``WORK_DIR/results.json`` as it ends; runs already
there are skipped, so the command can be repeated or extended.
"""
import argparse
import json
import os
import os.path as osp
from pathlib import Path

from mmengine.config import Config

from mmseg_sign.utils.atomic import atomic_write
from mmseg_sign.utils.toy_table import row_stem, run, stage_ends, table
from mmseg_sign.visualization.toy_report import draw_comparison


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('configs', nargs='+')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--data-seeds', type=int, nargs='+',
                        default=[0, 1, 2])
    parser.add_argument('--rows', nargs='+', default=None,
                        help='LABEL=STEM@STAGE, in table order')
    parser.add_argument('--amp-dtype', choices=['float16', 'bfloat16'],
                        help="tools/train.py's --amp-dtype")
    parser.add_argument('--cfg-options', nargs='+', default=[],
                        metavar='KEY=VALUE', help='for every run')
    parser.add_argument('--work-dir', default='work_dirs/toy_table')
    parser.add_argument('--out', default=None, help='also write the table')
    parser.add_argument('--picture', default=None, metavar='PNG',
                        help="each config's final predictions on the first "
                        'test images (first data seed and seed)')
    args = parser.parse_args()
    wd = osp.abspath(args.work_dir)
    os.makedirs(wd, exist_ok=True)
    path = osp.join(wd, 'results.json')
    results = json.load(open(path)) if osp.exists(path) else {}
    for data_seed in args.data_seeds:
        for seed in args.seeds:
            for cfg_path in args.configs:
                stem = row_stem(cfg_path, args.amp_dtype)
                key = f'{stem}/{data_seed}/{seed}'
                if key not in results:
                    results[key] = run(cfg_path, wd, data_seed, seed,
                                       args.amp_dtype, args.cfg_options)
                    text = json.dumps(results, indent=1)
                    atomic_write(path, lambda tmp: Path(tmp).write_text(text))
                    print(key, json.dumps(results[key]), flush=True)
    if args.rows:
        rows = {}
        for spec in args.rows:
            label, _, target = spec.rpartition('=')
            stem, _, stage = target.partition('@')
            rows[label or target] = (stem, stage)
    else:
        stems = [row_stem(c, args.amp_dtype) for c in args.configs]
        rows = {f'{stem}@{s}': (stem, s) for c, stem in zip(
            args.configs, stems) for s in stage_ends(c)}
    lines = table(results, rows, args.data_seeds, args.seeds)
    if args.picture:
        labels = {target: label for label, target in rows.items()}
        models = []
        for cfg_path in args.configs:
            stem = row_stem(cfg_path, args.amp_dtype)
            last = list(stage_ends(cfg_path))[-1]
            run_dir = osp.join(wd, f'{stem}_data{args.data_seeds[0]}_seed'
                               f'{args.seeds[0]}')
            cfg = Config.fromfile(osp.join(run_dir, osp.basename(cfg_path)))
            with open(osp.join(run_dir, 'last_checkpoint')) as f:
                models.append((labels.get((stem, last), stem), cfg,
                               f.read().strip()))
        draw_comparison(models, models[0][1], args.picture)
    print('\n'.join(lines))
    if args.out:
        text = '\n'.join(lines) + '\n'
        atomic_write(args.out, lambda tmp: Path(tmp).write_text(text))


if __name__ == '__main__':
    main()
