"""The paper's ablations on the toy benchmark, over several seeds.

    python tools/toy_ablation.py --seeds 0 1 2 --out docs/toy_results.md

Makes a toy dataset whose test images (96×96) are larger than the training
crops (64×64), as the paper tests RPE, then trains with tools/train.py:

* stages (one run per seed gives all four rows): after ``train`` only,
  after ``transfer`` (= SIGN without self-training), + ST, + AST (ST
  resumes the AST run's checkpoint taken when self-training starts, so
  both share the first two stages exactly);
* positional encoding (after ``transfer``): none / absolute /
  absolute + interpolation / relative;
* SIM architecture (after ``transfer``): conv / attention / self-attention
  / multi-head self-attention.

Writes a markdown table of mean ± std over the seeds of seen, unseen and
harmonic mIoU, with the command that made it.
"""
import argparse
import json
import os
import os.path as osp
import shutil
import subprocess
import sys
import time

import numpy as np

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
BASE = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
TRAIN, TRANSFER, SELF_TRAIN = 600, 200, 200
KEYS = ('mIoU_seen', 'mIoU_unseen', 'hIoU')


def write_config(path, data_root, body):
    with open(path, 'w') as f:
        f.write(f"""_base_ = [{BASE!r}]
data_root = {data_root!r}
train_dataloader = dict(dataset=dict(data_root=data_root))
val_dataloader = dict(dataset=dict(data_root=data_root))
test_dataloader = val_dataloader
model = dict(decode_head=dict(
    class_embeddings=data_root + '/class_embeddings.npz'))
default_hooks = dict(checkpoint=dict(interval=200))
{body}
""")


def stage_body(stages):
    total = sum(s['iters'] for s in stages)
    # SIGNStageHook validates at the end of every stage
    return f"""stages = {stages!r}
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
train_cfg = dict(max_iters={total}, val_interval={total})
"""


FULL = stage_body([
    dict(name='train', iters=TRAIN),
    dict(name='transfer', iters=TRANSFER),
    dict(name='self_train', iters=SELF_TRAIN, mode='AST', temperature=2.0)
])
ST = stage_body([
    dict(name='train', iters=TRAIN),
    dict(name='transfer', iters=TRANSFER),
    dict(name='self_train', iters=SELF_TRAIN, mode='ST', top_p=75.0)
])
TRANSFER_ONLY = stage_body([
    dict(name='train', iters=TRAIN),
    dict(name='transfer', iters=TRANSFER)
])


def train(cfg, work_dir, seed, resume=False):
    cmd = [sys.executable, osp.join(REPO, 'tools', 'train.py'), cfg,
           '--work-dir', work_dir, '--cfg-options', f'randomness.seed={seed}']
    if resume:
        cmd.insert(-2, '--resume')
    t0 = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{proc.stderr[-4000:]}')
    return time.time() - t0


def val_metrics(work_dir):
    """{iteration: {key: value}} of every validation in the work dir."""
    out = {}
    for root, _, files in os.walk(work_dir):
        if 'scalars.json' in files:
            with open(osp.join(root, 'scalars.json')) as f:
                for line in f:
                    record = json.loads(line)
                    if 'hIoU' in record:
                        out[record['step']] = {k: record[k] for k in KEYS}
    return out


def fmt(values):
    values = np.array(values)
    return f'{values.mean():.2f} ± {values.std():.2f}'


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--work-dir', default='work_dirs/toy_ablation')
    parser.add_argument('--out', default='docs/toy_results.md')
    args = parser.parse_args()
    wd = osp.abspath(args.work_dir)
    os.makedirs(wd, exist_ok=True)
    data_root = osp.join(wd, 'data')
    if not osp.exists(osp.join(data_root, 'class_embeddings.npz')):
        sys.path.insert(0, REPO)
        from mmseg_sign.datasets.toy_data import make_toy_dataset
        make_toy_dataset(data_root, val_size=(96, 96), seed=0)
    cfgs = {}
    for name, body in [('ast', FULL), ('st', ST)]:
        cfgs[name] = osp.join(wd, f'{name}.py')
        write_config(cfgs[name], data_root, body)
    variants = dict(
        pe_none="model = dict(neck=dict(pe_type='none'))",
        pe_absolute="model = dict(neck=dict(pe_type='absolute'))",
        pe_absolute_interp="model = dict(neck=dict("
        "pe_type='absolute_interp', train_size=(8, 8)))",
        sim_conv="model = dict(neck=dict(arch='conv'))",
        sim_attention="model = dict(neck=dict(arch='attention'))",
        sim_self_attention="model = dict(neck=dict(arch='self_attention'))")
    for name, body in variants.items():
        cfgs[name] = osp.join(wd, f'{name}.py')
        write_config(cfgs[name], data_root, TRANSFER_ONLY + body)

    rows = {}
    seconds = []

    def add(row, metrics):
        rows.setdefault(row, []).append(metrics)

    for seed in args.seeds:
        run = osp.join(wd, f'ast_seed{seed}')
        seconds.append(train(cfgs['ast'], run, seed))
        m = val_metrics(run)
        add('stages: train only', m[TRAIN])
        add('stages: + transfer (SIGN)', m[TRAIN + TRANSFER])
        add('stages: + AST (T = 2)', m[TRAIN + TRANSFER + SELF_TRAIN])
        st_run = osp.join(wd, f'st_seed{seed}')
        os.makedirs(st_run, exist_ok=True)
        start = osp.join(st_run, f'iter_{TRAIN + TRANSFER}.pth')
        shutil.copy(osp.join(run, f'iter_{TRAIN + TRANSFER}.pth'), start)
        with open(osp.join(st_run, 'last_checkpoint'), 'w') as f:
            f.write(start)
        train(cfgs['st'], st_run, seed, resume=True)
        add('stages: + ST (top 75 %)', val_metrics(st_run)[
            TRAIN + TRANSFER + SELF_TRAIN])
        add('PE: relative (RPE, default)', m[TRAIN + TRANSFER])
        add('SIM: multi-head self-attention (default)', m[TRAIN + TRANSFER])
        for name in variants:
            vrun = osp.join(wd, f'{name}_seed{seed}')
            train(cfgs[name], vrun, seed)
            label = {
                'pe_none': 'PE: none', 'pe_absolute': 'PE: absolute',
                'pe_absolute_interp': 'PE: absolute + interpolation',
                'sim_conv': 'SIM: conv', 'sim_attention': 'SIM: attention',
                'sim_self_attention': 'SIM: self-attention'
            }[name]
            add(label, val_metrics(vrun)[TRAIN + TRANSFER])
        print(f'seed {seed} done', flush=True)

    order = [
        'stages: train only', 'stages: + transfer (SIGN)',
        'stages: + ST (top 75 %)', 'stages: + AST (T = 2)',
        'PE: none', 'PE: absolute', 'PE: absolute + interpolation',
        'PE: relative (RPE, default)', 'SIM: conv', 'SIM: attention',
        'SIM: self-attention', 'SIM: multi-head self-attention (default)'
    ]
    lines = [
        '# Toy benchmark: ablations',
        '',
        f'Made by `python tools/toy_ablation.py --seeds '
        f'{" ".join(map(str, args.seeds))}` on a 2-core CPU '
        f'({np.mean(seconds):.0f} s per full SIGN run of '
        f'{TRAIN + TRANSFER + SELF_TRAIN} iterations). Toy data: '
        '`make_toy_dataset(val_size=(96, 96), seed=0)` (200 training '
        'images, 64×64 crops; 50 test images of 96×96, larger than the '
        'crops as in the paper\'s PE study); 7 seen / 3 unseen classes. '
        f'Stages: train {TRAIN}, transfer {TRANSFER}, self-training '
        f'{SELF_TRAIN} iterations. PE and SIM rows are measured after the '
        'transfer stage. mIoU in %, mean ± std over '
        f'{len(args.seeds)} seeds.',
        '',
        '| setting | seen mIoU | unseen mIoU | harmonic mIoU |',
        '|---|---|---|---|',
    ]
    for row in order:
        ms = rows[row]
        lines.append(f'| {row} | ' + ' | '.join(
            fmt([m[k] for m in ms]) for k in KEYS) + ' |')
    with open(args.out, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    print('\n'.join(lines))


if __name__ == '__main__':
    main()
