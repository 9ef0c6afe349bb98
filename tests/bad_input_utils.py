"""What the bad-input tables of the run, checkpoint and table tools share
(``tests/test_e2e/test_bad_inputs_*.py``, one module per surface): each
case is what a user does, and the clear error (or correct behaviour) it
must get, before any work is wasted; ``run_case`` runs one. The tools run
as a user runs them (``tools/train.py`` / ``tools/test.py`` as
subprocesses, ``tools/publish_model.py`` / ``tools/build_class_embeddings.py``
through their ``main(argv)``) on the toy data and the shipped toy config
shrunk by a few overrides; the checkpoints come from one real two-iteration
SIGN run.
"""
import contextlib
import hashlib
import importlib.util
import json
import os
import os.path as osp
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import tool_server
import torch
from e2e_utils import REPO, mmseg_tool

from mmseg_sign.datasets.class_names import TOY_UNSEEN

# two train iterations, no validation, plain loaders: a checkpoint with
# G, D, optimizers and the message hub, as every SIGN run writes
SHORT = """
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=2,
         by_epoch=False)])
train_cfg = dict(stages=[dict(name='train', iters=2)], val_interval=100,
                 val_at_stage_end=False)
default_hooks = dict(checkpoint=dict(interval=2), logger=dict(interval=1))
train_dataloader = dict(batch_size=4, num_workers=0,
                        persistent_workers=False)
val_dataloader = dict(num_workers=0, persistent_workers=False)
test_dataloader = val_dataloader
"""
# a plan that starts after the train stage (from load_from)
TRANSFER_THEN_SELF_TRAIN = """
train_cfg = dict(
    stages=[dict(name='transfer', iters=2, mode='alternate', block_iters=1),
            dict(name='self_train', iters=1, mode='AST')],
    val_at_stage_end=False)
"""
NEW_UNSEEN = ('kite', 'lamp', 'river')
assert set(NEW_UNSEEN) != set(TOY_UNSEEN)
ONE_PLACE_SPLIT = f"""
split = dict(unseen_classes={NEW_UNSEEN!r})
train_dataloader = dict(dataset=dict(metainfo=split))
val_dataloader = dict(dataset=dict(metainfo=split))
test_dataloader = dict(dataset=dict(metainfo=split))
"""


# ------------------------------------------------------------- the context
def _load_tool(name):
    """``tools/<name>.py`` as a module (its ``main(argv)``)."""
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}', osp.join(REPO, 'tools', f'{name}.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


class Outcome:
    """What a user sees: exit status and output (or the exception)."""

    def __init__(self, rc, text):
        self.rc, self.text = rc, text

    def __repr__(self):
        return f'Outcome(rc={self.rc}, text=...{self.text[-3000:]})'


class Context:
    """The workspace (a copy of the toy data), config files and, built on
    first use, the checkpoint of a real two-iteration SIGN run."""

    def __init__(self, root, toy_root):
        self.root = root
        shutil.copytree(toy_root, osp.join(root, 'data', 'toy'))
        self.cfg = self.config('short.py', '')
        self._ckpt = None
        self._count = 0

    def path(self, *parts):
        return osp.join(self.root, *parts)

    def fresh(self, name):
        """A new empty directory."""
        self._count += 1
        path = self.path(f'{name}_{self._count}')
        os.makedirs(path)
        return path

    def config(self, name, body):
        base = osp.join(REPO, 'configs/sign/sign_toy.py')
        path = self.path(name)
        with open(path, 'w') as f:
            f.write(f'_base_ = [{base!r}]\n{SHORT}\n{body}\n')
        return path

    def tool(self, *args, timeout=300):
        """``python tools/<args[0]> ...`` in the workspace."""
        cmd = [sys.executable, osp.join(REPO, 'tools', args[0]), *args[1:]]
        env = dict(
            os.environ,
            PYTHONWARNINGS='ignore',
            OMP_NUM_THREADS='1',
            MKL_NUM_THREADS='1')
        proc = tool_server.run(
            cmd,
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout)
        return Outcome(proc.returncode, proc.stdout + proc.stderr)

    @staticmethod
    def main(tool, *argv):
        """``tools/<tool>.py``'s ``main(argv)`` in this process."""
        try:
            _load_tool(tool).main(list(argv))
        except SystemExit as err:
            if err.code in (None, 0):
                return Outcome(0, '')
            return Outcome(
                err.code if isinstance(err.code, int) else 1, str(err.code))
        return Outcome(0, '')

    @property
    def ckpt(self):
        """``iter_2.pth`` of a real SIGN run (train stage, 2 iterations)."""
        if self._ckpt is None:
            wd = self.path('wd_trained')
            out = self.tool('train.py', self.cfg, '--work-dir', wd)
            assert out.rc == 0, out
            self._ckpt = osp.join(wd, 'iter_2.pth')
            assert osp.isfile(self._ckpt)
        return self._ckpt

    def copy_ckpt(self, name):
        path = self.path(name)
        shutil.copy(self.ckpt, path)
        return path


# ------------------------------------------------------------------ actions
class RunsCommand:
    """Unpickling it runs ``command`` (a hostile checkpoint's payload)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command, )


def publish_hostile(ctx, case):
    sentinel = ctx.path('PAYLOAD_RAN')
    evil = ctx.path('evil.pth')
    state = torch.load(ctx.ckpt, map_location='cpu')
    state['meta']['note'] = RunsCommand(f'touch {sentinel}')
    torch.save(state, evil)
    out = ctx.main('publish_model', evil, ctx.path('pub', 'evil.pth'))
    case.after = lambda: not osp.exists(sentinel) and not osp.exists(
        ctx.path('pub', 'evil.pth'))
    return out


def _guard_input(ctx, case, path):
    digest = _sha(path)
    case.after = lambda: _sha(path) == digest and len(
        os.listdir(osp.dirname(path))
    ) == 1  # nothing written or renamed beside it


def publish_onto_itself(no_hash):

    def action(ctx, case):
        folder = ctx.fresh('same')
        ckpt = shutil.copy(ctx.ckpt, osp.join(folder, 'iter_2.pth'))
        _guard_input(ctx, case, ckpt)
        args = [ckpt, ckpt] + (['--no-hash'] if no_hash else [])
        return ctx.main('publish_model', *args)

    return action


def publish_through_link(kind):

    def action(ctx, case):
        folder = ctx.fresh('link')
        ckpt = shutil.copy(ctx.ckpt, osp.join(folder, 'iter_2.pth'))
        digest = _sha(ckpt)
        other = ctx.fresh('other')
        out = osp.join(other, 'pub.pth')
        if kind == 'symlink_dir':  # OUT's folder is IN's, through a link
            os.rmdir(other)
            os.symlink(folder, other)
            out = osp.join(other, 'iter_2.pth')
        else:
            os.link(ckpt, out)  # a hard link: another path, same inode
        case.after = lambda: _sha(ckpt) == digest
        return ctx.main('publish_model', ckpt, out, '--no-hash')

    return action


def export_onto(which):
    """tools/deployment/pytorch2onnx.py with --out one of its inputs."""

    def action(ctx, case):
        folder = ctx.fresh(f'onnx_{which}')
        ckpt = shutil.copy(ctx.ckpt, osp.join(folder, 'iter_2.pth'))
        cfg = shutil.copy(ctx.cfg, osp.join(folder, 'short.py'))
        digests = {path: _sha(path) for path in (ckpt, cfg)}
        case.after = lambda: all(_sha(p) == d for p, d in digests.items(
        )) and sorted(os.listdir(folder)) == ['iter_2.pth', 'short.py']
        target = ckpt if which == 'checkpoint' else cfg
        return ctx.tool('deployment/pytorch2onnx.py', cfg, ckpt, '--out',
                        target)

    return action


def publish_normal(ctx, case):
    """The control: a training checkpoint publishes, atomically (no
    temporary file left), and loads with weights_only=True."""
    folder = ctx.fresh('pub_ok')
    out = ctx.main('publish_model', ctx.ckpt, osp.join(folder, 'sign.pth'))

    def after():
        files = os.listdir(folder)
        ok = len(files) == 1 and re.fullmatch(r'sign-[0-9a-f]{8}\.pth',
                                              files[0])
        pub = torch.load(osp.join(folder, files[0]), weights_only=True)
        return ok and pub['meta']['sign_inference_only'] and not any(
            k.startswith('decode_head.generator.') for k in pub['state_dict'])

    case.after = after
    return out


def damaged_checkpoint(kind):
    """An empty or truncated copy of a real checkpoint."""

    def make(ctx):
        path = ctx.path(f'{kind}.pth')
        data = open(ctx.ckpt, 'rb').read()
        with open(path, 'wb') as f:
            f.write(b'' if kind == 'empty' else data[:len(data) // 2])
        return path

    return make


def publish_damaged(kind):

    def action(ctx, case):
        folder = ctx.fresh('pub_bad')
        out = ctx.main('publish_model',
                       damaged_checkpoint(kind)(ctx),
                       osp.join(folder, 'x.pth'))
        case.after = lambda: os.listdir(folder) == []
        return out

    return action


def run_test_py_on_damaged(kind):

    def action(ctx, case):
        return ctx.tool('test.py', ctx.cfg,
                        damaged_checkpoint(kind)(ctx), '--work-dir',
                        ctx.fresh('wd_test'))

    return action


def run_test_py_on_plain_pickle(ctx, case):
    """A plain (non-zip) pickle whose payload runs a command: refused as
    unsafe (not reported as a damaged file), the payload never runs."""
    import pickle
    sentinel = ctx.path('PLAIN_PAYLOAD_RAN')
    evil = ctx.path('evil_plain.pth')
    with open(evil, 'wb') as f:
        pickle.dump(
            {
                'state_dict': {},
                'meta': RunsCommand(f'touch {sentinel}')
            },
            f,
            protocol=4)
    case.after = lambda: not osp.exists(sentinel)
    return ctx.tool('test.py', ctx.cfg, evil, '--work-dir',
                    ctx.fresh('wd_test'))


def evaluate_with_metric_split(ctx, case):
    unseen = ','.join(NEW_UNSEEN)
    return ctx.tool('test.py', ctx.cfg, ctx.ckpt, '--work-dir',
                    ctx.fresh('wd_test'), '--cfg-options',
                    f'test_evaluator.unseen_classes=[{unseen}]')


def resume_with(body, *options):

    def action(ctx, case):
        cfg = ctx.config(f'resume_{ctx._count}.py', body)
        wd = ctx.fresh('wd_resume')
        out = ctx.tool('train.py', cfg, '--work-dir', wd, '--resume',
                       '--cfg-options', f'load_from={ctx.ckpt}', *options)
        case.after = lambda: not [
            f for f in os.listdir(wd) if f.endswith('.pth')
        ]
        return out

    return action


def resume_published(ctx, case):
    """--resume from a published checkpoint was refused as "written
    by another model"; it is the same model, for inference only."""
    folder = ctx.fresh('pub_for_resume')
    ctx.main('publish_model', ctx.ckpt, osp.join(folder, 'p.pth'), '--no-hash')
    wd = ctx.fresh('wd_resume_pub')
    out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd, '--resume',
                   '--cfg-options', f'load_from={osp.join(folder, "p.pth")}')
    case.after = lambda: not [f for f in os.listdir(wd) if f.endswith('.pth')]
    return out


def score_other_classes(ctx, case):
    """A checkpoint of another dataset with as many classes (a
    CamVid model on the toy data) was scored under the toy's names."""
    from mmseg_sign.datasets.class_names import CAMVID_CLASSES
    ckpt = torch.load(ctx.ckpt, map_location='cpu', weights_only=False)
    classes = [c for c in CAMVID_CLASSES if c != 'pole']
    ckpt['meta']['dataset_meta']['classes'] = tuple(classes)
    path = osp.join(ctx.fresh('other_classes'), 'camvid.pth')
    torch.save(ckpt, path)
    wd = ctx.fresh('wd_test_other')
    case.after = lambda: not osp.exists(osp.join(wd, 'test_results.json'))
    # the flag a split refusal suggests changes nothing here
    return ctx.tool('test.py', ctx.cfg, path, '--work-dir', wd,
                    '--allow-split-change')


def score_with_another_table(ctx, case):
    """tools/test.py with a class-embedding table the checkpoint
    was not trained with ran on the checkpoint's vectors, without a word."""
    from mmseg_sign.datasets.class_names import TOY_CLASSES
    from mmseg_sign.embeddings import save_class_embeddings
    table = osp.join(ctx.fresh('other_table'), 'other.npz')
    save_class_embeddings(
        table, TOY_CLASSES,
        np.random.default_rng(5).normal(size=(len(TOY_CLASSES),
                                              600)).astype(np.float32))
    wd = ctx.fresh('wd_test_table')
    case.after = lambda: not osp.exists(osp.join(wd, 'test_results.json'))
    return ctx.tool('test.py', ctx.cfg, ctx.ckpt, '--work-dir', wd,
                    '--cfg-options',
                    f'model.decode_head.class_embeddings={table}')


def load_published(allow):

    def action(ctx, case):
        folder = ctx.fresh('pub_for_load')
        ctx.main('publish_model', ctx.ckpt, osp.join(folder, 'p.pth'),
                 '--no-hash')
        cfg = ctx.config(f'load_pub_{ctx._count}.py', TRANSFER_THEN_SELF_TRAIN)
        wd = ctx.fresh('wd_load_pub')
        opts = [f'load_from={osp.join(folder, "p.pth")}']
        if allow:
            opts.append('allow_untrained_gan=True')
        out = ctx.tool('train.py', cfg, '--work-dir', wd, '--cfg-options',
                       *opts)
        case.after = (lambda: osp.isfile(osp.join(wd, 'iter_3.pth'))) \
            if allow else (lambda: not osp.exists(osp.join(wd,
                                                           'iter_1.pth')))
        return out

    return action


def train_with_max_iters(ctx, case):
    wd = ctx.fresh('wd_max_iters')
    out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd, '--cfg-options',
                   'train_cfg.max_iters=10')
    case.after = lambda: os.listdir(wd) == []  # failed before the Runner
    return out


def train_with(body):
    """tools/train.py on the short config plus ``body``, in a fresh work
    dir; nothing may be trained (no checkpoint)."""

    def action(ctx, case):
        cfg = ctx.config(f'train_{ctx._count}.py', body)
        wd = ctx.fresh('wd_train')
        out = ctx.tool('train.py', cfg, '--work-dir', wd)
        case.after = lambda: not [
            f for f in os.listdir(wd) if f.endswith('.pth')
        ]
        return out

    return action


def train_with_options(*options):

    def action(ctx, case):
        wd = ctx.fresh('wd_options')
        out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd, '--cfg-options',
                       *options)
        case.after = lambda: os.listdir(wd) == []  # failed before the Runner
        return out

    return action


def make_toy_with(*args):

    def action(ctx, case):
        out = osp.join(ctx.fresh('toy_out'), 'toy')
        result = ctx.tool('make_toy_dataset.py', '--out', out, *args)
        case.after = lambda: not osp.exists(out)  # refused before writing
        return result

    return action


def toy_table_report(change=None, *args):
    """tools/toy_table.py --report-only over the protocol's stored runs of
    sign_toy.py (seeds 0-1, docs/toy_runs/protocol_data0.json), one value
    changed by ``change(runs)`` first."""

    def action(ctx, case):
        with open(osp.join(REPO, 'docs/toy_runs/protocol_data0.json')) as f:
            stored = json.load(f)
        runs = {k: stored[k] for k in ('sign_toy/0/0', 'sign_toy/0/1')}
        if change is not None:
            change(runs)
        wd = ctx.fresh('wd_table')
        with open(osp.join(wd, 'results.json'), 'w') as f:
            json.dump(runs, f)
        return ctx.tool('toy_table.py',
                        osp.join(REPO,
                                 'configs/sign/sign_toy.py'), '--report-only',
                        '--seeds', '0', '1', '--work-dir', wd, *args)

    return action


def toy_table_dry_run(*args):
    """tools/toy_table.py --dry-run of sign_toy.py, seed 0, into a fresh
    work dir."""

    def action(ctx, case):
        return ctx.tool('toy_table.py',
                        osp.join(REPO, 'configs/sign/sign_toy.py'),
                        '--dry-run', '--seeds', '0', '--work-dir',
                        ctx.fresh('wd_dry_run'), *args)

    return action


def _set(key, value):

    def change(runs):
        stage, metric = key.split('.')
        runs['sign_toy/0/1'][stage][metric] = value

    return change


def dist_train_with(procs):

    def action(ctx, case):
        wd = ctx.fresh('wd_dist')
        proc = tool_server.run([
            'bash',
            osp.join(REPO, 'tools', 'dist_train.sh'), ctx.cfg, procs,
            '--work-dir', wd
        ],
                               cwd=ctx.root,
                               capture_output=True,
                               text=True,
                               timeout=120)
        case.after = lambda: os.listdir(wd) == []
        return Outcome(proc.returncode, proc.stdout + proc.stderr)

    return action


def toy_table_on_camvid(ctx, case):
    wd = ctx.fresh('wd_table')
    camvid = osp.join(REPO, 'configs/sign/sign_camvid.py')
    out = ctx.tool('toy_table.py', camvid, '--seeds', '0', '--work-dir', wd)
    case.after = lambda: os.listdir(wd) == []  # refused before any work
    return out


def resume_in_empty_work_dir(ctx, case):
    wd = ctx.fresh('wd_resume_empty')
    out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd, '--resume')
    case.after = lambda: osp.isfile(osp.join(wd, 'iter_2.pth'))
    return out


def resume_dangling_last_checkpoint(ctx, case):
    wd = ctx.fresh('wd_dangling')
    shutil.copy(ctx.ckpt, osp.join(wd, 'iter_2.pth'))
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(osp.join(wd, 'iter_9.pth'))
    before = _sha(osp.join(wd, 'iter_2.pth'))
    out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd, '--resume')
    case.after = lambda: _sha(osp.join(wd, 'iter_2.pth')) == before
    return out


def train_with_max_iters_in_file(ctx, case):
    cfg = ctx.config('max_iters_file.py', 'train_cfg = dict(max_iters=5)')
    wd = ctx.fresh('wd_max_iters_file')
    out = ctx.tool('train.py', cfg, '--work-dir', wd)
    case.after = lambda: os.listdir(wd) == []  # failed before the Runner
    return out


def mmseg_train_with_max_iters_in_file(ctx, case):
    """The same through mmseg's own tools/train.py: the training loop
    (StagePlanTrainLoop) refuses it before any iteration."""
    cfg = ctx.config('max_iters_file_mmseg.py',
                     'train_cfg = dict(max_iters=5)')
    wd = ctx.fresh('wd_max_iters_mmseg')
    proc = tool_server.run(
        [sys.executable,
         _mmseg_train_tool(), cfg, '--work-dir', wd],
        cwd=ctx.root,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1'))
    case.after = lambda: not [f for f in os.listdir(wd) if f.endswith('.pth')]
    return Outcome(proc.returncode, proc.stdout + proc.stderr)


def _seeded_run(ctx):
    """A two-iteration run trained with randomness.seed=3 (made once):
    its work dir, config and record ``WD/record.py``."""
    cfg = ctx.path('record.py')
    wd = ctx.path('wd_record')
    if not osp.isdir(wd):
        ctx.config('record.py', '')
        out = ctx.tool('train.py', cfg, '--work-dir', wd, '--cfg-options',
                       'randomness.seed=3')
        assert out.rc == 0, out
    return cfg, wd, osp.join(wd, 'record.py')


def _keeps_record(record, case):
    """After: the training run's record is unchanged (seed 3), and the
    new command's own config lies in its timestamped folder."""
    with open(record) as f:
        text = f.read()
    assert 'seed=3' in text

    def after():
        with open(record) as f:
            return f.read() == text

    case.after = after


def run_test_py_in_the_training_work_dir(ctx, case):
    """The README's sequence (train, then test with the
    default work dir, which is the training run's)."""
    cfg, wd, record = _seeded_run(ctx)
    _keeps_record(record, case)
    return ctx.tool('test.py', cfg, osp.join(wd, 'iter_2.pth'), '--work-dir',
                    wd)


def mmseg_train_refused_in_a_used_work_dir(ctx, case):
    """mmseg's own tools/train.py, another seed, a work dir
    holding the earlier run: refused by the work-dir guard, the record
    kept."""
    cfg, wd, record = _seeded_run(ctx)
    _keeps_record(record, case)
    proc = tool_server.run([
        sys.executable,
        _mmseg_train_tool(), cfg, '--work-dir', wd, '--cfg-options',
        'randomness.seed=5'
    ],
                           cwd=ctx.root,
                           capture_output=True,
                           text=True,
                           timeout=300,
                           env=dict(
                               os.environ,
                               PYTHONWARNINGS='ignore',
                               OMP_NUM_THREADS='1'))
    return Outcome(proc.returncode, proc.stdout + proc.stderr)


def overwrite_with_a_shorter_plan(*extra):
    """A work dir holding a 2-iteration run, then a 1-iteration run with
    --overwrite-checkpoints (with --resume too)."""

    def action(ctx, case):
        wd = ctx.fresh('wd_overwrite')
        shutil.copy(ctx.ckpt, osp.join(wd, 'iter_2.pth'))
        with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
            f.write(osp.join(wd, 'iter_2.pth'))
        digest = _sha(osp.join(wd, 'iter_2.pth'))

        def after():
            top = sorted(n for n in os.listdir(wd) if n.endswith('.pth'))
            moved = [
                osp.join(wd, d, 'iter_2.pth') for d in os.listdir(wd)
                if d.startswith('replaced_')
            ]
            if extra:  # refused: nothing moved or written
                return top == ['iter_2.pth'] and not moved
            return top == ['iter_1.pth'] and len(moved) == 1 and \
                _sha(moved[0]) == digest

        case.after = after
        return ctx.tool('train.py', ctx.cfg, '--work-dir', wd,
                        '--overwrite-checkpoints', *extra, '--cfg-options',
                        'train_cfg.stages.0.iters=1')

    return action


def train_refused(*args):
    """tools/train.py with ``args`` (work dir, options), no after-check."""

    def action(ctx, case):
        return ctx.tool('train.py', ctx.cfg, *args)

    return action


def _mmseg_train_tool():
    return mmseg_tool('train.py')


def train_with_partial_scheduler_dict(ctx, case):
    cfg = ctx.config('partial_scheduler.py',
                     'param_scheduler = dict(_delete_=True, segmentor=[])')
    wd = ctx.fresh('wd_partial_scheduler')
    out = ctx.tool('train.py', cfg, '--work-dir', wd)
    case.after = lambda: os.listdir(wd) == []  # failed before the Runner
    return out


def train_with_bad_last_val_label(ctx, case):
    """An out-of-range value in the last validation label file: found
    before iteration 1, not at the first validation."""
    from PIL import Image
    data = osp.join(ctx.fresh('data_bad_val'), 'toy')
    shutil.copytree(ctx.path('data', 'toy'), data)
    with open(osp.join(data, 'ImageSets/Segmentation/val.txt')) as f:
        last = f.read().split()[-1]
    path = osp.join(data, 'SegmentationClass', f'{last}.png')
    label = np.array(Image.open(path))
    label[0, 0] = 200
    Image.fromarray(label).save(path)
    cfg = ctx.config(
        'bad_val.py',
        ''.join(f'{loader} = dict(dataset=dict(data_root={data!r}))\n'
                for loader in ('train_dataloader', 'val_dataloader',
                               'test_dataloader')))
    wd = ctx.fresh('wd_bad_val')
    case.expect = case.expect.replace('LAST', last)
    case.after = lambda: not [f for f in os.listdir(wd) if f.endswith('.pth')]
    return ctx.tool('train.py', cfg, '--work-dir', wd)


def train_without_unseen_classes(ctx, case):
    body = "split = dict(unseen_classes=())\n" + ''.join(
        f'{loader} = dict(dataset=dict(metainfo=split))\n'
        for loader in ('train_dataloader', 'val_dataloader',
                       'test_dataloader'))
    cfg = ctx.config('no_unseen.py', body)
    wd = ctx.fresh('wd_no_unseen')
    case.after = lambda: not [f for f in os.listdir(wd) if f.endswith('.pth')]
    return ctx.tool('train.py', cfg, '--work-dir', wd)


HOLD_LOCK = """
import sys, time
from mmseg_sign.utils.work_dir_lock import lock_work_dir
lock_work_dir(sys.argv[1])
print('locked', flush=True)
time.sleep(120)
"""


@contextlib.contextmanager
def locked_by_another_process(wd, case):
    """``wd`` locked by a live process (as tools/train.py locks it); the
    case's expected message gets its pid."""
    holder = subprocess.Popen([sys.executable, '-c', HOLD_LOCK, wd],
                              stdout=subprocess.PIPE,
                              text=True,
                              env=dict(os.environ, OMP_NUM_THREADS='1'))
    try:
        assert holder.stdout.readline().strip() == 'locked'
        case.expect = case.expect.replace('PID', str(holder.pid))
        yield
    finally:
        holder.kill()
        holder.wait()


def train_in_locked_work_dir(ctx, case):
    """A second run in a work dir while the first lives."""
    wd = ctx.fresh('wd_locked')
    with locked_by_another_process(wd, case):
        out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd)
    case.after = lambda: sorted(os.listdir(wd)) == ['.train.lock']
    return out


def mmseg_train_in_locked_work_dir(ctx, case):
    """mmseg's own tools/train.py (the one ``mim train`` runs) in the work
    dir of a live run: stopped by WorkDirLockHook before any checkpoint."""
    tool = _mmseg_train_tool()
    wd = ctx.fresh('wd_locked_mmseg')
    with locked_by_another_process(wd, case):
        proc = tool_server.run(
            [sys.executable, tool, ctx.cfg, '--work-dir', wd],
            cwd=ctx.root,
            capture_output=True,
            text=True,
            timeout=300,
            env=dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1'))
    case.after = lambda: not [f for f in os.listdir(wd) if f.endswith('.pth')]
    return Outcome(proc.returncode, proc.stdout + proc.stderr)


# a run whose forked child (as a dataloader worker) outlives it
HOLD_LOCK_AND_FORK = """
import os, sys, time
from mmseg_sign.utils.work_dir_lock import lock_work_dir
lock_work_dir(sys.argv[1])
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
print('locked', child, flush=True)
time.sleep(120)
"""


def take_over_lock_of_killed_run_with_live_workers(ctx, case):
    """``kill -9`` of a run whose workers live on for a while: a resume
    started at once takes the lock (the workers never held it)."""
    from mmseg_sign.utils.work_dir_lock import lock_work_dir, unlock_work_dir
    wd = ctx.fresh('wd_orphans')
    dead = subprocess.Popen([sys.executable, '-c', HOLD_LOCK_AND_FORK, wd],
                            stdout=subprocess.PIPE,
                            text=True)
    _, child = dead.stdout.readline().split()
    dead.kill()
    dead.wait()
    try:
        os.kill(int(child), 0)  # the orphan is alive
        lock_work_dir(wd)
        with open(osp.join(wd, '.train.lock')) as f:
            return Outcome(0, f.read())
    finally:
        unlock_work_dir(wd)
        os.kill(int(child), 9)


def take_over_stale_lock(ctx, case):
    """A lock file left by a dead process (kill -9) is taken over."""
    from mmseg_sign.utils.work_dir_lock import (LOCK_NAME, lock_work_dir,
                                                unlock_work_dir)
    wd = ctx.fresh('wd_stale')
    dead = subprocess.Popen([sys.executable, '-c', HOLD_LOCK, wd],
                            stdout=subprocess.PIPE,
                            text=True)
    assert dead.stdout.readline().strip() == 'locked'
    dead.kill()  # SIGKILL: no atexit, the lock file stays
    dead.wait()
    with open(osp.join(wd, LOCK_NAME)) as f:
        assert f'pid {dead.pid}' in f.read()
    try:
        lock_work_dir(wd)
        with open(osp.join(wd, LOCK_NAME)) as f:
            return Outcome(0, f.read())
    finally:
        unlock_work_dir(wd)


def read_table_with(rows, names=None):

    def action(ctx, case):
        from mmseg_sign.embeddings import read_class_embeddings
        from mmseg_sign.embeddings.table import save_class_embeddings
        names_ = list(names or [f'c{i}' for i in range(len(rows))])
        path = ctx.path(f'table_{ctx._count}.npz')
        ctx._count += 1
        if names is None or len(set(names_)) == len(names_):
            save_class_embeddings(path, names_, np.array(rows, np.float32))
        else:  # duplicate names: write the archive by hand
            np.savez(
                path,
                classes=np.array(names_),
                embeddings=np.array(rows, np.float32))
        try:
            read_class_embeddings(path)
        except ValueError as err:
            return Outcome(1, str(err))
        return Outcome(0, '')

    return action


def build_table(synonyms=None, synonyms_text=None, sources=None):
    """tools/build_class_embeddings.py on the toy word vectors."""

    def action(ctx, case):
        args = [
            '--dataset', 'toy', '--no-default-synonyms', '--out',
            ctx.path(f'built_{ctx._count}.npz')
        ]
        ctx._count += 1
        for source in sources or [
                'data/toy/word_vectors/word2vec_like.txt:word2vec'
        ]:
            args += ['--source', ctx.path(source)]
        if synonyms is not None or synonyms_text is not None:
            path = ctx.path(f'syn_{ctx._count}.json')
            with open(path, 'wb') as f:
                f.write(
                    synonyms_text if synonyms_text is not None else json.
                    dumps(synonyms).encode())
            args += ['--synonyms', path]
        out = ctx.main('build_class_embeddings', *args)
        case.after = lambda: not osp.exists(args[args.index('--out') + 1])
        return out

    return action


def vector_file(name, content):
    """A word-vector file with ``content`` (bytes, or a function of the
    real toy text file's bytes)."""

    def make(ctx):
        real = ctx.path('data/toy/word_vectors/word2vec_like.txt')
        data = content(open(real, 'rb').read()) if callable(content) \
            else content
        with open(ctx.path(name), 'wb') as f:
            f.write(data)
        return name

    return make


def build_from(make_file, fmt):

    def action(ctx, case):
        name = make_file(ctx)
        return build_table(sources=[f'{name}:{fmt}'])(ctx, case)

    return action


def _ragged(data):
    """The toy word2vec text file with one number dropped from line 3."""
    lines = data.decode().splitlines()
    lines[2] = lines[2].rsplit(' ', 1)[0]
    return ('\n'.join(lines) + '\n').encode()


def build_metric(**kw):

    def action(ctx, case):
        from mmseg.registry import METRICS
        try:
            METRICS.build(dict(type='GZSLIoUMetric', **kw))
        except ValueError as err:
            return Outcome(1, str(err))
        return Outcome(0, '')

    return action


def build_plan_with(**stage):

    def action(ctx, case):
        from mmseg_sign.structures import StagePlan
        stages = [dict(name='train', iters=2), stage]
        try:
            StagePlan(stages)
        except ValueError as err:
            return Outcome(1, str(err))
        return Outcome(0, '')

    return action


# ------------------------------------------------------------------ the table
@dataclass
class Case:
    name: str
    does: str  # what the user does
    action: Callable
    expect: str  # regex the output must match
    ok: bool = False  # expected exit: 0 (correct behaviour) or an error
    # tools/train.py shows the traceback of an error raised in the Runner
    # (as mmseg's does); everything else ends with the message alone
    traceback_ok: bool = False
    after: Optional[Callable] = field(default=None, repr=False)


DAMAGED = r'Cannot read the checkpoint \S*{}\.pth: it is {}'


def run_case(ctx, case: Case) -> None:
    """Run ``case`` and check its exit status and output (and its
    after-check)."""
    out = case.action(ctx, case)
    if case.ok:
        assert out.rc == 0, out
    else:
        assert out.rc != 0, out
        assert case.traceback_ok or 'Traceback' not in out.text, out
    assert re.search(case.expect, out.text, re.S), (case.expect, out)
    if case.after is not None:
        assert case.after(), f'{case.name}: the after-check failed'


def train_config_with_options(body, *options):
    """tools/train.py on the short config plus ``body``, with
    ``--cfg-options``; nothing may be written to the work dir."""

    def action(ctx, case):
        ctx._count += 1
        cfg = ctx.config(f'train_options_{ctx._count}.py', body)
        wd = ctx.fresh('wd_train_options')
        out = ctx.tool('train.py', cfg, '--work-dir', wd, '--cfg-options',
                       *options)
        case.after = lambda: os.listdir(wd) == []
        return out

    return action


def train_where_the_lock_cannot_go(ctx, case):
    """A work dir where the lock file cannot be written (a folder of its
    name: the OSError a read-only work dir gives, which root meets too)."""
    from mmseg_sign.utils.work_dir_lock import LOCK_NAME
    wd = ctx.fresh('wd_lock')
    os.makedirs(osp.join(wd, LOCK_NAME))
    out = ctx.tool('train.py', ctx.cfg, '--work-dir', wd)
    case.after = lambda: os.listdir(wd) == [LOCK_NAME]
    return out


def toy_table_without_its_data(ctx, case):
    """tools/toy_table.py --data config on two CamVid configs in a folder
    without their data: one error before any run starts."""
    wd = ctx.fresh('wd_table_no_data')
    out = ctx.tool(
        'toy_table.py',
        osp.join(REPO, 'configs/sign/sign_lite0_camvid-480x360.py'),
        osp.join(REPO, 'configs/baselines/cagnet_lite0_camvid-480x360_st.py'),
        '--data', 'config', '--seeds', '0', '--work-dir', wd)
    case.after = lambda: os.listdir(wd) == []
    return out
