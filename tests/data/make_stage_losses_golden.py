"""Write ``tests/data/stage_losses_golden.json``: the losses of the first 5
iterations of each SIGN stage (train, transfer, annealed self-training) of
the shipped toy config, seed 0, as ``tools/train.py`` logs them.

A refactoring that moves code must leave these numbers unchanged (to the
last digit on the machine that wrote them; the test allows float32
rounding, which differs between CPUs):

    OMP_NUM_THREADS=1 python tests/data/make_stage_losses_golden.py

The toy data is made by ``make_toy_dataset(num_train=24, num_val=8,
seed=0)`` (the ``toy_root`` test fixture).
"""
import glob
import json
import os
import os.path as osp
import subprocess
import sys
import tempfile

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
GOLDEN = osp.join(REPO, 'tests', 'data', 'stage_losses_golden.json')
ITERS = 5
#: 5 iterations a stage; transfer in blocks of 2 (both of its phases run)
CFG_OPTIONS = [
    f'train_cfg.stages.0.iters={ITERS}',
    f'train_cfg.stages.1.iters={ITERS}',
    'train_cfg.stages.1.block_iters=2',
    f'train_cfg.stages.2.iters={ITERS}',
    'default_hooks.logger.interval=1',
]


def logged_losses(work_dir: str) -> list:
    """``[{iter, loss_*...}]`` of the training iterations in the run's
    ``vis_data/scalars.json``."""
    files = glob.glob(osp.join(work_dir, '*', 'vis_data', 'scalars.json'))
    assert len(files) == 1, files
    rows = []
    with open(files[0]) as f:
        for line in f:
            row = json.loads(line)
            if 'loss' in row:  # a training iteration
                rows.append({
                    k: v
                    for k, v in row.items()
                    if k == 'iter' or k.startswith(('loss', 'st_'))
                })
    return rows


def run_stages(data_root: str, work_dir: str) -> list:
    """Train the shrunk toy plan in a copy of the repo layout whose
    ``data/toy`` is ``data_root``; return :func:`logged_losses`."""
    os.makedirs(osp.join(work_dir, 'data'), exist_ok=True)
    link = osp.join(work_dir, 'data', 'toy')
    if not osp.exists(link):
        os.symlink(osp.abspath(data_root), link)
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'train.py'),
        osp.join(REPO, 'configs', 'sign', 'sign_toy.py'), '--work-dir',
        osp.join(work_dir, 'run'), '--cfg-options', *CFG_OPTIONS
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = subprocess.run(
        cmd,
        cwd=work_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=600)
    if proc.returncode:
        raise RuntimeError(proc.stdout[-3000:] + proc.stderr[-3000:])
    return logged_losses(osp.join(work_dir, 'run'))


if __name__ == '__main__':
    sys.path.insert(0, REPO)
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    with tempfile.TemporaryDirectory() as tmp:
        data = osp.join(tmp, 'toy')
        make_toy_dataset(data, num_train=24, num_val=8, seed=0)
        rows = run_stages(data, osp.join(tmp, 'ws'))
    with open(GOLDEN, 'w') as f:
        json.dump(rows, f, indent=1)
    print(f'{GOLDEN}: {len(rows)} iterations')
