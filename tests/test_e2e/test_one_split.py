"""One split: the seen/unseen split is set once; a config
that gives different splits to different places fails before iteration 1,
and tools/test.py refuses a test split other than the checkpoint's unless
--allow-split-change."""
import os
import os.path as osp
import sys
from types import SimpleNamespace

import pytest
import tool_server
import torch
from e2e_utils import REPO, last_metrics, toy_workspace
from mmengine.config import Config

from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
from mmseg_sign.engine.hooks import ClassSplitHook
from mmseg_sign.engine.hooks.strict_checkpoint_hook import (
    checkpoint_split_mismatch, checkpoint_unseen_classes)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

NEW_UNSEEN = ('kite', 'lamp', 'river')  # the default is flag, hedge, river
# two training iterations, validated at the end
SHORT = """
stages = [dict(name='train', iters=2)]
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=2,
         by_epoch=False)])
train_cfg = dict(stages=stages, val_interval=2)
default_hooks = dict(checkpoint=dict(interval=2), logger=dict(interval=1))
"""
# the README's one-place override ("Datasets")
ONE_PLACE = f"""
split = dict(unseen_classes={NEW_UNSEEN!r})
train_dataloader = dict(dataset=dict(metainfo=split))
val_dataloader = dict(dataset=dict(metainfo=split))
test_dataloader = dict(dataset=dict(metainfo=split))
"""


def write(path, body):
    base = osp.join(REPO, 'configs/sign/sign_toy.py')
    path.write_text(f'_base_ = [{base!r}]\n{SHORT}\n{body}\n')
    return str(path)


def run(ws, tool, *args):
    cmd = [sys.executable, osp.join(REPO, 'tools', tool), *args]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope='module')
def ws(tmp_path_factory, toy_root):
    ws = toy_workspace(tmp_path_factory, toy_root, 'one_split_ws')
    return ws


@pytest.fixture(scope='module')
def one_place_run(ws):
    """Two iterations with the README's one-place override."""
    cfg = write(ws / 'one_place.py', ONE_PLACE)
    wd = str(ws / 'wd_one_place')
    rc, out = run(ws, 'train.py', cfg, '--work-dir', wd)
    assert rc == 0, out[-4000:]
    return cfg, wd, out


def test_training_dataset_only_override_fails_before_iteration_1(ws):
    cfg = write(
        ws / 'train_only.py', f"""
train_dataloader = dict(
    dataset=dict(metainfo=dict(unseen_classes={NEW_UNSEEN!r})))
""")
    rc, out = run(ws, 'train.py', cfg, '--work-dir', str(ws / 'wd_bad'))
    assert rc != 0
    assert 'the seen/unseen split differs between train_dataloader.dataset ' \
        f"(unseen {NEW_UNSEEN}) and val_dataloader.dataset (unseen " \
        f'{TOY_UNSEEN})' in out, out[-3000:]
    assert 'split = dict(unseen_classes=' in out  # the fix
    assert 'Iter(train)' not in out  # no iteration ran
    assert not osp.exists(ws / 'wd_bad' / 'iter_1.pth')


def test_one_place_override_trains_and_the_metric_uses_it(one_place_run):
    cfg, wd, out = one_place_run
    assert Config.fromfile(cfg).test_dataloader.dataset.metainfo == dict(
        unseen_classes=NEW_UNSEEN)
    ckpt = torch.load(osp.join(wd, 'iter_2.pth'), map_location='cpu')
    mask = ckpt['state_dict']['decode_head.unseen_mask'].tolist()
    assert tuple(c for c, u in zip(TOY_CLASSES, mask) if u) == NEW_UNSEEN
    assert tuple(ckpt['meta']['dataset_meta']['unseen_classes']) == \
        NEW_UNSEEN
    # the validation table marks the new split
    rows = {
        line.split('|')[1].strip(): line.split('|')[2].strip()
        for line in out.splitlines()
        if line.startswith('|') and line.split('|')[1].strip() in TOY_CLASSES
    }
    assert {c for c, s in rows.items() if s == 'unseen'} == set(NEW_UNSEEN)


def test_test_tool_refuses_another_split_unless_allowed(ws, one_place_run):
    _, wd, _ = one_place_run
    ckpt = osp.join(wd, 'iter_2.pth')
    default_cfg = write(ws / 'default_split.py', '')  # flag, hedge, river
    rc, out = run(ws, 'test.py', default_cfg, ckpt, '--work-dir',
                  str(ws / 'wd_t1'))
    assert rc != 0
    assert f'The checkpoint {ckpt} was trained on another seen/unseen ' \
        'split' in out, out[-3000:]
    assert f'trained with the unseen classes {NEW_UNSEEN}' in out
    assert f'the test dataset (test_dataloader.dataset) has {TOY_UNSEEN}' \
        in out
    assert '--allow-split-change' in out and 'hIoU' not in out
    rc, out = run(ws, 'test.py', default_cfg, ckpt, '--work-dir',
                  str(ws / 'wd_t2'), '--allow-split-change')
    assert rc == 0, out[-3000:]
    assert 'hIoU' in last_metrics(str(ws / 'wd_t2'))


# ----------------------------------------------------------- fast checks
def fake_runner(body):
    return SimpleNamespace(
        cfg=Config.fromstring(
            "_base_ = [{!r}]\n".format(
                osp.join(REPO, 'configs/_base_/datasets/toy.py')) + body,
            '.py'),
        val_loop=None)


TRAIN_META = dict(classes=TOY_CLASSES, unseen_classes=TOY_UNSEEN)


def test_hook_checks_test_dataset_and_metric_from_the_config():
    ClassSplitHook.check_one_split(fake_runner(''), TRAIN_META)  # agree
    with pytest.raises(
            ValueError,
            match=r'train_dataloader.dataset .*and '
            r'test_dataloader.dataset \(unseen \(.kite.'):
        ClassSplitHook.check_one_split(
            fake_runner('test_dataloader = dict(dataset=dict(metainfo=dict('
                        f'unseen_classes={NEW_UNSEEN!r})))'), TRAIN_META)
    with pytest.raises(ValueError, match=r'and val_evaluator \(unseen '):
        ClassSplitHook.check_one_split(
            fake_runner("val_evaluator = dict(type='GZSLIoUMetric', "
                        'unseen_classes=[0, 1])'), TRAIN_META)
    # a metric that repeats the same split is fine
    ClassSplitHook.check_one_split(
        fake_runner("val_evaluator = dict(type='GZSLIoUMetric', "
                    f'unseen_classes={list(TOY_UNSEEN)!r})'), TRAIN_META)


def test_checkpoint_split_helpers():
    mask = torch.tensor([c in NEW_UNSEEN for c in TOY_CLASSES])
    ckpt = dict(
        state_dict={'module.decode_head.unseen_mask': mask},
        meta=dict(dataset_meta=dict(classes=TOY_CLASSES)))
    assert checkpoint_unseen_classes(ckpt) == NEW_UNSEEN
    assert checkpoint_split_mismatch(ckpt, TRAIN_META).startswith(
        f'the checkpoint was trained with the unseen classes {NEW_UNSEEN}')
    assert checkpoint_split_mismatch(
        ckpt, dict(TRAIN_META, unseen_classes=NEW_UNSEEN)) == ''
    # no mask: meta.dataset_meta.unseen_classes; nothing: no check
    only_meta = dict(
        state_dict={},
        meta=dict(
            dataset_meta=dict(classes=TOY_CLASSES, unseen_classes=NEW_UNSEEN)))
    assert checkpoint_unseen_classes(only_meta) == NEW_UNSEEN
    assert checkpoint_split_mismatch(dict(state_dict={}), TRAIN_META) == ''
    # an all-False mask (a head whose split was never set) says nothing
    unset = dict(state_dict={'decode_head.unseen_mask': mask & False})
    assert checkpoint_unseen_classes(unset, TOY_CLASSES) is None
