# Copyright (c) OpenMMLab. All rights reserved.
"""The toy experiment of docs/add_classes.md: train without a class, add it
by name, and compare (mean ± std over seeds).

For each seed: ``tools/train.py configs/sign/sign_toy_held-out.py`` (the
class is void in training), ``tools/test.py`` on that model (before),
``tools/add_classes.py --classes lamp`` with the toy word vectors, and
``tools/test.py`` on the written config and checkpoint (after)::

    python tools/analysis/toy_add_classes.py --seeds 0 1 2 \\
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
SOURCES = ['data/toy/word_vectors/word2vec_like.txt:word2vec',
           'data/toy/word_vectors/fasttext_like.bin:word2vec_binary']


def run(args, log):
    """Run a tool of this repository, its output in ``log``."""
    with open(log, 'w') as f:
        proc = subprocess.run([sys.executable, *args], stdout=f,
                              stderr=subprocess.STDOUT, cwd=REPO)
    if proc.returncode:
        sys.exit(f'failed ({proc.returncode}): {" ".join(args)}; see {log}')


def class_iou(log, name):
    """IoU of class ``name`` from the per-class table of a test log."""
    with open(log) as f:
        rows = re.findall(rf'^\|\s*{re.escape(name)}\s*\|\s*\w+\s*\|\s*'
                          r'([\d.]+|nan)\s*\|', f.read(), re.M)
    return float(rows[-1]) if rows else float('nan')


def metrics(work_dir):
    files = sorted(glob.glob(osp.join(work_dir, '*', '*.json')))
    with open(files[-1]) as f:
        return json.load(f)


def one_seed(seed, root, name, iters):
    wd = osp.join(root, f'seed{seed}')
    ckpt = osp.join(wd, 'iter_1000.pth')
    if not osp.exists(ckpt):
        run([osp.join(REPO, 'tools/train.py'), CONFIG, '--work-dir', wd,
             '--cfg-options', f'randomness.seed={seed}'],
            osp.join(root, f'train_seed{seed}.log'))
    before_log = osp.join(root, f'test_before_seed{seed}.log')
    run([osp.join(REPO, 'tools/test.py'), CONFIG, ckpt, '--work-dir',
         osp.join(wd, 'test_before')], before_log)
    out = osp.join(wd, f'plus_{name}')
    add = [osp.join(REPO, 'tools/add_classes.py'), CONFIG, ckpt,
           '--classes', name, '--no-default-synonyms', '--out', out,
           '--seed', str(seed)]
    for source in SOURCES:
        add += ['--source', source]
    if iters:
        add += ['--iters', str(iters)]
    run(add, osp.join(root, f'add_seed{seed}.log'))
    after_log = osp.join(root, f'test_after_seed{seed}.log')
    run([osp.join(REPO, 'tools/test.py'), osp.join(out, 'config.py'),
         osp.join(out, 'model.pth'), '--work-dir',
         osp.join(wd, 'test_after')], after_log)
    before = metrics(osp.join(wd, 'test_before'))
    after = metrics(osp.join(wd, 'test_after'))
    return dict(
        seen_before=before['mIoU_seen'], seen_after=after['mIoU_seen'],
        unseen_before=before['mIoU_unseen'],
        unseen_after=after['mIoU_unseen'], h_before=before['hIoU'],
        h_after=after['hIoU'], added_iou=class_iou(after_log, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--work-dir', default='work_dirs/toy_add_classes')
    parser.add_argument('--name', default='lamp',
                        help='the held-out class (as in the config)')
    parser.add_argument('--iters', type=int, default=None,
                        help='refit iterations (default: the transfer '
                        "stage's)")
    args = parser.parse_args()
    root = osp.abspath(args.work_dir)
    os.makedirs(root, exist_ok=True)
    rows = {s: one_seed(s, root, args.name, args.iters) for s in args.seeds}
    keys = list(next(iter(rows.values())))
    print('seed | ' + ' | '.join(keys))
    for seed, row in rows.items():
        print(f'{seed} | ' + ' | '.join(f'{row[k]:.2f}' for k in keys))
    print('mean ± std | ' + ' | '.join(
        f'{np.mean([r[k] for r in rows.values()]):.2f} ± '
        f'{np.std([r[k] for r in rows.values()]):.2f}' for k in keys))


if __name__ == '__main__':
    main()
