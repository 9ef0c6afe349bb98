# Copyright (c) OpenMMLab. All rights reserved.
"""The toy experiment of docs/add_classes.md: train without a class, add it
by name, and compare (mean ± std over seeds).

For each seed: ``tools/train.py configs/sign/sign_toy_held-out.py`` (the
class is void in training), ``tools/test.py`` on that model (before),
``tools/add_classes.py --classes river`` with the toy word vectors (refit,
then self-training), and ``tools/test.py`` on the written config with the
refit checkpoint and with the final one (after). ``--reference`` also trains
``configs/sign/sign_toy.py`` with the same seed, where the class is an
unseen class from the start, and reports its IoU there::

    python tools/analysis/toy_add_classes.py --seeds 0 1 2 --reference \\
        --work-dir work_dirs/toy_add_classes

Finished steps are reused (a rerun continues where it stopped).
"""
import argparse
import glob
import json
import os
import os.path as osp
import re
import subprocess
import sys

import numpy as np

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(REPO, 'configs/sign/sign_toy_held-out.py')
REFERENCE = osp.join(REPO, 'configs/sign/sign_toy.py')
SOURCES = [
    'data/toy/word_vectors/word2vec_like.txt:word2vec',
    'data/toy/word_vectors/fasttext_like.bin:word2vec_binary'
]


def run(args, log):
    """Run a tool of this repository, its output in ``log``."""
    with open(log, 'w') as f:
        proc = subprocess.run([sys.executable, *args],
                              stdout=f,
                              stderr=subprocess.STDOUT,
                              cwd=REPO)
    if proc.returncode:
        sys.exit(f'failed ({proc.returncode}): {" ".join(args)}; see {log}')


def class_iou(log, name):
    """IoU of class ``name`` from the per-class table of a test log."""
    with open(log) as f:
        rows = re.findall(
            rf'^\|\s*{re.escape(name)}\s*\|\s*\w+\s*\|\s*'
            r'([\d.]+|nan)\s*\|', f.read(), re.M)
    return float(rows[-1]) if rows else float('nan')


def metrics(work_dir):
    files = sorted(glob.glob(osp.join(work_dir, '*', '*.json')))
    with open(files[-1]) as f:
        return json.load(f)


def train_and_test(config, wd, log_root, tag, seed):
    """Train ``config`` (unless its last checkpoint is there) and test it;
    ``(checkpoint, test log)``."""
    last = osp.join(wd, 'last_checkpoint')  # the plan's last iteration
    if not osp.exists(last):
        run([
            osp.join(REPO, 'tools/train.py'), config, '--work-dir', wd,
            '--cfg-options', f'randomness.seed={seed}'
        ], osp.join(log_root, f'train_{tag}_seed{seed}.log'))
    with open(last) as f:
        ckpt = f.read().strip()
    log = osp.join(log_root, f'test_{tag}_seed{seed}.log')
    run([
        osp.join(REPO, 'tools/test.py'), config, ckpt, '--work-dir',
        osp.join(wd, 'test')
    ], log)
    return ckpt, log


def one_seed(seed, root, name, iters, reference):
    wd = osp.join(root, f'seed{seed}')
    ckpt, _ = train_and_test(CONFIG, wd, root, 'held_out', seed)
    out = osp.join(wd, f'plus_{name}')
    if not osp.exists(osp.join(out, 'model.pth')):
        # this script owns ``out``: --force replaces what an interrupted
        # run left there (add_classes refuses a non-empty folder otherwise)
        add = [
            osp.join(REPO, 'tools/add_classes.py'), CONFIG, ckpt, '--classes',
            name, '--no-default-synonyms', '--out', out, '--seed',
            str(seed), '--force'
        ]
        for source in SOURCES:
            add += ['--source', source]
        if iters:
            add += ['--iters', str(iters)]
        run(add, osp.join(root, f'add_seed{seed}.log'))
    m = metrics(osp.join(wd, 'test'))
    row = dict(
        seen_before=m['mIoU_seen'],
        unseen_before=m['mIoU_unseen'],
        h_before=m['hIoU'])
    for tag, weights in (('refit', 'refit.pth'), ('after', 'model.pth')):
        log = osp.join(root, f'test_{tag}_seed{seed}.log')
        run([
            osp.join(REPO, 'tools/test.py'),
            osp.join(out, 'config.py'),
            osp.join(out, weights), '--work-dir',
            osp.join(wd, f'test_{tag}')
        ], log)
        m = metrics(osp.join(wd, f'test_{tag}'))
        row.update({
            f'seen_{tag}': m['mIoU_seen'],
            f'unseen_{tag}': m['mIoU_unseen'],
            f'h_{tag}': m['hIoU'],
            f'{name}_{tag}': class_iou(log, name)
        })
    if reference:
        _, log = train_and_test(REFERENCE, osp.join(root, f'ref_seed{seed}'),
                                root, 'reference', seed)
        row[f'{name}_trained_in'] = class_iou(log, name)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--work-dir', default='work_dirs/toy_add_classes')
    parser.add_argument(
        '--reference',
        action='store_true',
        help='also train sign_toy.py (the class unseen '
        'from the start) for comparison')
    parser.add_argument(
        '--name',
        default='river',
        help='the held-out class (as in the config)')
    parser.add_argument(
        '--iters',
        type=int,
        default=None,
        help='refit iterations (default: the transfer '
        "stage's)")
    args = parser.parse_args()
    root = osp.abspath(args.work_dir)
    os.makedirs(root, exist_ok=True)
    rows = {
        s: one_seed(s, root, args.name, args.iters, args.reference)
        for s in args.seeds
    }
    keys = list(next(iter(rows.values())))
    for key in keys:  # one row per quantity: seeds, then mean ± std
        values = [r[key] for r in rows.values()]
        print(f'{key:>18} | ' + ' | '.join(f'{v:6.2f}' for v in values) +
              f' | {np.mean(values):.2f} ± {np.std(values):.2f}')


if __name__ == '__main__':
    main()
