"""NaN guard: a non-finite loss, or weights a step made
non-finite, stops training at once with the stage, the iteration and the
loss named, and no non-finite checkpoint is written; under AMP a
non-finite gradient alone is the loss scaler's business, not an error."""
import glob
import os
import os.path as osp
import re
import sys

import numpy as np
import pytest
import tool_server
import torch
from e2e_utils import REPO, toy_workspace, write_config
from mmengine.config import Config
from mmengine.logging import MessageHub
from mmengine.optim import OptimWrapper

from mmseg_sign.engine.optim_wrappers import MixedPrecisionOptimWrapper

# the toy SIGN config, shrunk: 3 train + 1 transfer iterations, a
# checkpoint after every iteration
SHORT = """
train_dataloader = dict(batch_size=2)
stages = [dict(name='train', iters=3),
          dict(name='transfer', iters=2, block_iters=1)]
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=3,
         by_epoch=False)
])
train_cfg = dict(stages=stages, val_interval=100)
default_hooks = dict(checkpoint=dict(interval=1, max_keep_ckpts=-1),
                     logger=dict(interval=1))
"""


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, toy_root):
    ws = toy_workspace(tmp_path_factory, toy_root, 'nan_ws')
    return ws


def train(workspace, name, *cfg_options):
    """tools/train.py on the shrunk toy config; returns (rc, stderr,
    work_dir)."""
    cfg = write_config(workspace / f'{name}.py', 'configs/sign/sign_toy.py',
                       SHORT)
    wd = str(workspace / f'wd_{name}')
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'train.py'), cfg, '--work-dir', wd
    ]
    if cfg_options:
        cmd += ['--cfg-options', *cfg_options]
    env = dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1')
    proc = tool_server.run(
        cmd,
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=300)
    return proc.returncode, proc.stderr, wd


def saved_iters(wd):
    return sorted(
        int(re.search(r'iter_(\d+)\.pth$', p).group(1))
        for p in glob.glob(osp.join(wd, 'iter_*.pth')))


def assert_finite_checkpoints(wd):
    for it in saved_iters(wd):
        state = torch.load(
            osp.join(wd, f'iter_{it}.pth'), map_location='cpu')['state_dict']
        for key, value in state.items():
            if value.is_floating_point():
                assert value.isfinite().all(), (it, key)


@pytest.mark.slow
def test_huge_learning_rate_stops_at_the_first_nan_loss(workspace):
    """Generator lr 1e30: iteration 1 is finite (G's weights become
    ~1e30), iteration 2's G losses are NaN."""
    rc, err, wd = train(workspace, 'lr', 'optim_wrapper.generator.optimizer'
                        '.lr=1e30')
    assert rc != 0, err[-3000:]
    assert 'FloatingPointError: Non-finite loss' in err, err[-3000:]
    msg = err[err.index('FloatingPointError'):]
    assert 'loss_mmd = nan' in msg
    assert "SIGN stage 'train', iteration 2 of the stage" in msg
    assert 'iteration 2 of the run' in msg
    assert 'learning rate' in msg and 'AmpOptimWrapper' in msg
    assert saved_iters(wd) == [1]  # nothing from iteration 2 on
    assert_finite_checkpoints(wd)


@pytest.mark.slow
def test_embedding_table_scaled_by_1e30_stops_before_a_nan_checkpoint(
        workspace):
    """A class-embedding table scaled by 1e30 (the loader accepts it: it
    is finite) and a linear G output: G's features of ~1e30 overflow the
    MMD's squared distances (‖x‖² > float32's 3.4e38: inf − inf) in
    iteration 1, whose loss_mmd is NaN (with ``torch.cdist`` before issue
    31 the loss stayed finite and the gradients overflowed into G's
    weights). Training stops in that iteration: no checkpoint at all."""
    from mmseg_sign.embeddings import (load_class_embeddings,
                                       save_class_embeddings)
    src = str(workspace / 'data' / 'toy' / 'class_embeddings.npz')
    names = [str(n) for n in np.load(src)['classes']]
    scaled = str(workspace / 'emb_1e30.npz')
    save_class_embeddings(scaled, names, load_class_embeddings(src) * 1e30)
    assert np.abs(load_class_embeddings(scaled, names)).max() > 1e28
    rc, err, wd = train(workspace, 'table',
                        f'model.decode_head.class_embeddings={scaled}',
                        'model.decode_head.generator_out_act=None')
    assert rc != 0, err[-3000:]
    msg = err[err.index('FloatingPointError'):]
    assert 'Non-finite loss' in msg and 'loss_mmd = nan' in msg
    assert "SIGN stage 'train', iteration 1 of the stage" in msg
    assert 'class-embedding table with a large scale' in msg
    assert saved_iters(wd) == []


# ------------------------------------------------ in-process, _update only
@pytest.fixture()
def model(toy_root):
    from mmseg.registry import MODELS
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.model.decode_head.class_embeddings = osp.join(toy_root,
                                                      'class_embeddings.npz')
    model = MODELS.build(cfg.model)
    model.stage, model.stage_iter = 'transfer', 4
    return model


def infinite_grad_loss(param):
    """Finite (0) loss whose gradient is +inf (d sqrt(x) / dx at 0)."""
    return torch.sqrt(param - param.detach()).sum()


def test_nan_loss_term_is_named_with_stage_and_iterations(model):
    hub = MessageHub.get_instance('nan_guard_test')
    hub.update_info('loop_stage', 'train')
    hub.update_info('iter', 41)
    bias = model.decode_head.conv_seg.bias
    wrapper = OptimWrapper(torch.optim.SGD([bias], lr=0.1))
    losses = dict(
        loss_ok=bias.sum() * 0 + 1.0,
        loss_bad=bias.sum() * float('nan'),
        acc_seg=torch.tensor(float('nan')))  # not a loss: ignored
    try:
        with pytest.raises(FloatingPointError) as info:
            model._update(wrapper, losses)
    finally:
        hub.pop_info('loop_stage')
        hub.pop_info('iter')
    msg = str(info.value)
    assert "Non-finite loss in SIGN stage 'transfer', iteration 5 of the " \
        'stage (iteration 42 of the run): loss_bad = nan.' in msg
    assert 'loss_ok' not in msg and 'acc_seg' not in msg


def test_finite_losses_pass_and_return_log_vars(model):
    bias = model.decode_head.conv_seg.bias
    wrapper = OptimWrapper(torch.optim.SGD([bias], lr=0.1))
    log_vars = model._update(
        wrapper, dict(loss_a=(bias**2).sum(), acc=torch.tensor(float('nan'))))
    assert set(log_vars) == {'loss_a', 'acc'}


def test_infinite_gradient_plain_wrapper_is_an_error(model):
    """Plain OptimWrapper: the step writes -inf into the weights."""
    bias = model.decode_head.conv_seg.bias
    wrapper = OptimWrapper(torch.optim.SGD([bias], lr=0.1))
    with pytest.raises(
            FloatingPointError,
            match=r'Non-finite weights after the optimizer step'
            r'.*loss_x = 0.*1 parameter tensor\(s\): '
            r'decode_head\.conv_seg\.bias'):
        model._update(wrapper, dict(loss_x=infinite_grad_loss(bias)))


def amp_wrapper(monkeypatch, params):
    """The project's float16 MixedPrecisionOptimWrapper (torch's CPU
    GradScaler, initial scale 2^16)."""
    return MixedPrecisionOptimWrapper(
        optimizer=torch.optim.SGD(params, lr=0.1),
        dtype='float16',
        loss_scale=dict(init_scale=2.0**16))


def test_infinite_gradient_under_amp_is_left_to_the_loss_scaler(
        model, monkeypatch):
    bias = model.decode_head.conv_seg.bias
    before = bias.detach().clone()
    wrapper = amp_wrapper(monkeypatch, [bias])
    log_vars = model._update(wrapper, dict(loss_x=infinite_grad_loss(bias)))
    assert float(log_vars['loss_x']) == 0.0
    assert torch.equal(bias.detach(), before)  # step skipped
    assert wrapper.loss_scaler.get_scale() == 2.0**15  # scale lowered


def test_nan_loss_under_amp_is_still_an_error(model, monkeypatch):
    bias = model.decode_head.conv_seg.bias
    wrapper = amp_wrapper(monkeypatch, [bias])
    with pytest.raises(FloatingPointError, match='loss_x = nan'):
        model._update(wrapper, dict(loss_x=bias.sum() * float('nan')))
