"""Helpers to run the tools as a user would (subprocesses, real Runner)."""
import glob
import importlib.util
import json
import os
import os.path as osp
import shutil
import sys

import tool_server
import torch

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))


def write_config(path, base, body):
    """A config inheriting ``base`` (repo-relative) with overrides."""
    with open(path, 'w') as f:
        f.write(f"_base_ = [{osp.join(REPO, base)!r}]\n{body}\n")
    return str(path)


def toy_workspace(tmp_path_factory, toy_root, name='ws'):
    """A new directory with ``data/toy``, as a user's checkout has it."""
    ws = tmp_path_factory.mktemp(name)
    shutil.copytree(toy_root, ws / 'data' / 'toy')
    return ws


def mmseg_tool(name):
    """mmseg's own ``tools/<name>`` (the one ``mim train`` / ``mim test``
    runs), shipped inside the mmseg package."""
    import mmseg
    tool = osp.join(osp.dirname(mmseg.__file__), '.mim', 'tools', name)
    assert osp.isfile(tool), tool
    return tool


def run_tool(args, cwd, launcher=None, nproc=2, timeout=600, mmseg=False):
    """Run ``tools/<args[0]>`` (this project's, or mmseg's own with
    ``mmseg=True``) with the current interpreter; returns the combined
    output and raises with it on failure."""
    tool = mmseg_tool(args[0]) if mmseg else osp.join(REPO, 'tools', args[0])
    if launcher == 'pytorch':
        cmd = [
            sys.executable, '-m', 'torch.distributed.run',
            f'--nproc_per_node={nproc}', '--master_port=29631', tool,
            *args[1:], '--launcher', 'pytorch'
        ]
    else:
        cmd = [sys.executable, tool, *args[1:]]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        cmd, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f'{" ".join(cmd)} failed:\n{out[-6000:]}')
    return out


def load_tool(name):
    """``tools/<name>.py`` imported as a module (its functions, as the
    command line calls them)."""
    path = osp.join(REPO, 'tools', f'{name}.py')
    spec = importlib.util.spec_from_file_location(
        'tool_' + name.replace('/', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_state(path):
    return torch.load(path, map_location='cpu')['state_dict']


def assert_same_weights(got_path, want_path):
    """The two checkpoints' weights are equal to the bit."""
    want, got = load_state(str(want_path)), load_state(str(got_path))
    assert set(got) == set(want)
    for key in want:
        torch.testing.assert_close(
            got[key], want[key], rtol=0, atol=0, msg=key)


def last_metrics(work_dir):
    """The metrics json that mmengine writes for a test run."""
    files = sorted(glob.glob(osp.join(work_dir, '*', '*.json')))
    assert files, f'no metrics json under {work_dir}'
    with open(files[-1]) as f:
        return json.load(f)


def short_plan(train: int,
               transfer: int,
               self_train: int,
               transfer_mode: str = "mode='alternate', block_iters=1",
               self_train_mode: str = "mode='AST', temperature=2.0") -> str:
    """Config text: a SIGN plan of ``train + transfer + self_train``
    iterations (the stage options as text), its run length and the
    segmentor's PolyLR over the train stage."""
    return f"""
stages = [dict(name='train', iters={train}),
          dict(name='transfer', iters={transfer}, {transfer_mode}),
          dict(name='self_train', iters={self_train}, {self_train_mode})]
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end={train},
         by_epoch=False)])
train_cfg = dict(stages=stages, val_interval=100)
"""


# The shipped toy config shrunk to 4 + 3 + 3 iterations (tools tests).
# transfer: blocks of 2, so iterations 5-6 train G, D and C on real and
# fake seen features and iteration 7 trains C on synthetic features
SIGN_SHORT = short_plan(4, 3, 3, "mode='alternate', block_iters=2") + """
default_hooks = dict(
    checkpoint=dict(interval=1, max_keep_ckpts=-1),
    logger=dict(interval=1))
"""
# the shipped toy loaders (persistent worker processes), written out for
# the SIGN run and its resumed copies: a resume must be exact with real
# workers, whose iterators are created once per process (the validation's
# at the first validation, inside the run)
REAL_LOADERS = """
train_dataloader = dict(num_workers=2, persistent_workers=True)
val_dataloader = dict(num_workers=2, persistent_workers=True)
"""
