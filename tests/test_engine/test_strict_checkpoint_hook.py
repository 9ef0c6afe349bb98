"""Strict test loading: tools/test.py fails on a
checkpoint that lacks or mismatches the model's weights (mmengine's lenient
load would evaluate random weights with rc 0); --lenient-load keeps
mmengine's behaviour."""
import os
import os.path as osp
import sys
from collections import OrderedDict

import pytest
import tool_server
import torch
from e2e_utils import (REPO, last_metrics, mmseg_tool, toy_workspace,
                       write_config)
from mmengine.config import Config

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def setup(tmp_path_factory, toy_root):
    """A workspace with data/toy, the toy SIGN config, and the state dict
    of a model built from that config."""
    from mmseg.registry import MODELS
    ws = toy_workspace(tmp_path_factory, toy_root, 'strict_ws')
    cfg_path = write_config(ws / 'sign.py', 'configs/sign/sign_toy.py', '')
    cfg = Config.fromfile(cfg_path)
    cfg.model.decode_head.class_embeddings = str(ws / 'data' / 'toy' /
                                                 'class_embeddings.npz')
    model = MODELS.build(cfg.model)
    return ws, cfg_path, model


def save(ws, name, state_dict, classes=None):
    meta = dict(experiment_name='sign_toy_run')
    if classes is not None:
        meta['dataset_meta'] = dict(classes=tuple(classes))
    path = str(ws / f'{name}.pth')
    torch.save(dict(state_dict=state_dict, meta=meta), path)
    return path


def run_test_tool(ws, cfg_path, ckpt, *extra, tool=None):
    tool = tool or osp.join(REPO, 'tools', 'test.py')
    cmd = [
        sys.executable, tool, cfg_path, ckpt, '--work-dir',
        str(ws / f'wd_{osp.basename(ckpt)}'), *extra
    ]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def test_empty_checkpoint_fails_and_lenient_load_keeps_mmengine(setup):
    ws, cfg_path, _ = setup
    ckpt = save(ws, 'empty', {})
    rc, out = run_test_tool(ws, cfg_path, ckpt)
    assert rc != 0
    assert f'The checkpoint {ckpt} does not match the model' in out
    assert "missing from the checkpoint: 160 of the model's 160 weight " \
        'tensors: backbone.stem.0.weight' in out
    assert '(and 155 more)' in out  # the first few keys, not all 160
    assert '--lenient-load' in out and 'config this checkpoint' in out
    assert 'hIoU' not in out  # nothing evaluated
    # --lenient-load: mmengine's warning and an evaluation, rc 0
    rc, out = run_test_tool(ws, cfg_path, ckpt, '--lenient-load')
    assert rc == 0, out[-3000:]
    assert 'The model and loaded state dict do not match exactly' in out
    assert 'hIoU' in last_metrics(str(ws / 'wd_empty.pth'))


def test_wrong_class_count_missing_and_unexpected_keys_fail(setup):
    """A checkpoint of a 7-class model (classifier, embedding table and
    trained dataset), one weight missing and one extra: every problem is
    named, with the key."""
    ws, cfg_path, model = setup
    state = OrderedDict(model.state_dict())
    del state['backbone.stem.0.weight']
    state['decode_head.extra.weight'] = torch.zeros(3)
    for key in ('decode_head.conv_seg.weight', 'decode_head.conv_seg.bias',
                'decode_head.class_embedding', 'decode_head.unseen_mask'):
        state[key] = state[key][:7].clone()
    ckpt = save(ws, 'seven', state, model.decode_head.class_names[:7])
    rc, out = run_test_tool(ws, cfg_path, ckpt)
    assert rc != 0
    assert "missing from the checkpoint: 1 of the model's 160 weight " \
        'tensors: backbone.stem.0.weight' in out
    assert 'unexpected in the checkpoint (not in the model): 1 weight ' \
        'tensor(s): decode_head.extra.weight' in out
    assert 'size mismatch: 4 weight tensor(s)' in out
    assert 'decode_head.conv_seg.weight (checkpoint [7, 128, 1, 1], model ' \
        '[10, 128, 1, 1])' in out
    assert "the checkpoint's classifier has 7 outputs, the model's 10" in out
    assert 'the checkpoint was trained on 7 classes, the test dataset has ' \
        '10' in out
    assert "written by the run 'sign_toy_run'" in out
    assert 'hIoU' not in out


def test_matching_checkpoint_is_evaluated(setup):
    """The model's own state dict, saved as DDP would ('module.' prefix)
    and without BN's num_batches_tracked: loads strictly, rc 0."""
    ws, cfg_path, model = setup
    state = OrderedDict((f'module.{k}', v)
                        for k, v in model.state_dict().items()
                        if 'num_batches_tracked' not in k)
    ckpt = save(ws, 'good', state, model.decode_head.class_names)
    rc, out = run_test_tool(ws, cfg_path, ckpt)
    assert rc == 0, out[-3000:]
    assert 'do not match' not in out
    assert 'hIoU' in last_metrics(str(ws / 'wd_good.pth'))


def test_mmseg_own_test_tool_is_strict_too(setup):
    """mmseg's own tools/test.py (what ``mim test`` runs) loads
    leniently and scored another model's checkpoint with random weights,
    rc 0. The schedules' ResumeCheckHook gives a test run without a
    StrictCheckpointHook one, so it is refused there too (pointing at this
    project's --lenient-load); a fitting checkpoint is evaluated. This
    project's --lenient-load --allow-split-change still evaluates."""
    ws, cfg_path, model = setup
    ckpt = save(ws, 'empty_mmseg', {})
    rc, out = run_test_tool(ws, cfg_path, ckpt, tool=mmseg_tool('test.py'))
    assert rc != 0
    assert f'The checkpoint {ckpt} does not match the model' in out
    assert "pass --lenient-load to this project's tools/test.py" in out
    assert 'hIoU' not in out
    good = save(ws, 'good_mmseg', model.state_dict(),
                model.decode_head.class_names)
    rc, out = run_test_tool(ws, cfg_path, good, tool=mmseg_tool('test.py'))
    assert rc == 0, out[-3000:]
    assert 'hIoU' in last_metrics(str(ws / 'wd_good_mmseg.pth'))
    rc, out = run_test_tool(ws, cfg_path, ckpt, '--lenient-load',
                            '--allow-split-change')
    assert rc == 0, out[-3000:]
    assert 'The model and loaded state dict do not match exactly' in out


# ------------------------------------------- the check itself, in-process
def test_checkpoint_mismatches_in_process(setup):
    from mmseg_sign.engine.hooks import checkpoint_mismatches
    _, _, model = setup
    state = model.state_dict()
    assert checkpoint_mismatches(model, dict(state_dict=state)) == []
    assert checkpoint_mismatches(model, state) == []  # bare state dict
    classes = model.decode_head.class_names
    meta = dict(dataset_meta=dict(classes=classes[:3]))
    assert checkpoint_mismatches(model, dict(
        state_dict=state, meta=meta), classes) == [
            'the checkpoint was trained on 3 classes, the test dataset has '
            '10'
        ]
    assert checkpoint_mismatches(
        model, [1, 2]) == ['it holds a list, not a dict with a state_dict']
    assert checkpoint_mismatches(model, dict(state_dict=None)) == [
        "its 'state_dict' is a NoneType, not a dict of tensors"
    ]
