"""``tools/train.py --amp`` on a CPU through every SIGN stage: the shipped
toy config shrunk by the plan of test_tools_e2e (4 + 3 + 3 iterations) and
to batches of 2, real dataloader workers; bfloat16 (the CPU default) and
float16 (loss scaling, saved per wrapper and restored by --resume)."""
import os.path as osp
import re
import shutil

import pytest
import torch
from e2e_utils import (REAL_LOADERS, SIGN_SHORT, assert_same_weights, run_tool,
                       toy_workspace, write_config)

from mmseg_sign.engine.optim_wrappers.mixed_precision import cpu_supports_bf16

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

WRAPPERS = {
    'segmentor', 'generator', 'discriminator', 'transfer',
    'transfer_generator', 'self_train', 'self_train_generator',
    'self_train_discriminator'
}


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, toy_root):
    ws = toy_workspace(tmp_path_factory, toy_root, 'ws_amp')
    # batches of 2 (the toy's 8 would do the same): half precision without
    # kernels takes ~1.5 s per image in an iteration here
    write_config(
        ws / 'sign.py', 'configs/sign/sign_toy.py',
        SIGN_SHORT + REAL_LOADERS + 'train_dataloader.update(batch_size=2)\n')
    return ws


def logged(out, key):
    return [float(v) for v in re.findall(rf'\b{key}: ([-0-9.e+naninf]+)', out)]


def check_all_stages(out):
    for stage in ("'train' (1/3)", "'transfer' (2/3)", "'self_train' (3/3)"):
        assert f'SIGN stage {stage}' in out
    assert len(logged(out, 'hIoU')) == 3  # validation after each stage
    for key in ('loss_ce', 'loss_mmd', 'loss_adv_g', 'loss_adv_d'):
        values = logged(out, key)
        assert values and all(torch.isfinite(torch.tensor(values)))
    kld = logged(out, 'loss_kld')  # train and self-training iterations
    assert len(kld) == 7 and all(v > 0 for v in kld), kld


@pytest.fixture(scope='module')
def bf16_run(workspace):
    wd = str(workspace / 'wd_bf16')
    out = run_tool(
        ['train.py',
         str(workspace / 'sign.py'), '--work-dir', wd, '--amp'], workspace)
    return wd, out


def test_amp_runs_every_stage_in_bfloat16(bf16_run):
    wd, out = bf16_run
    assert 'Mixed precision: bfloat16 autocast on cpu, no loss scaling.' \
        in out
    # this CPU's own bfloat16 support decides the warning
    assert ('has no bfloat16 kernels' in out) == (not cpu_supports_bf16())
    check_all_stages(out)
    ckpt = torch.load(osp.join(wd, 'iter_10.pth'), map_location='cpu')
    assert set(ckpt['optimizer']) == WRAPPERS
    assert not any('loss_scaler' in s for s in ckpt['optimizer'].values())


def test_mmseg_train_amp_is_this_projects_amp(workspace, bf16_run):
    """mmseg's own tools/train.py --amp (the one ``mim train``
    runs) on a SIGN config. It sets ``optim_wrapper.type =
    'AmpOptimWrapper'``; the constructor makes every wrapper mixed
    precision from it, so the run is this project's --amp run to the bit
    (before: a raw "'ConfigDict' object has no attribute 'type'")."""
    wd = str(workspace / 'wd_mmseg_amp')
    out = run_tool(
        ['train.py',
         str(workspace / 'sign.py'), '--work-dir', wd, '--amp'],
        workspace,
        mmseg=True)
    assert 'Mixed precision: bfloat16 autocast on cpu, no loss scaling.' \
        in out
    check_all_stages(out)
    assert set(
        torch.load(osp.join(wd, 'iter_10.pth'),
                   map_location='cpu')['optimizer']) == WRAPPERS
    assert_same_weights(
        osp.join(wd, 'iter_10.pth'), osp.join(bf16_run[0], 'iter_10.pth'))


SPNET_SHORT = """
param_scheduler = [dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0,
                        end=4, by_epoch=False)]
train_cfg = dict(max_iters=4, val_interval=4)
default_hooks = dict(checkpoint=dict(interval=4), logger=dict(interval=1))
"""


def test_mmseg_train_amp_on_spnet_runs_on_a_cpu(workspace):
    """mmseg's tools/train.py --amp on the SPNet config (one
    optimizer wrapper) built mmengine's AmpOptimWrapper, which asserts a
    GPU; its constructor now builds this project's mixed-precision wrapper
    from it, so the run is this project's --amp run to the bit."""
    cfg = write_config(workspace / 'spnet.py',
                       'configs/baselines/spnet_toy.py',
                       SPNET_SHORT + REAL_LOADERS)
    wds = {}
    for mmseg in (False, True):
        wds[mmseg] = str(workspace / f'wd_spnet_amp_{mmseg}')
        out = run_tool(['train.py', cfg, '--work-dir', wds[mmseg], '--amp'],
                       workspace,
                       mmseg=mmseg)
        assert 'Mixed precision: bfloat16 autocast on cpu' in out, out[-3000:]
        assert len(logged(out, 'mIoU_seen')) == 1
    assert_same_weights(
        osp.join(wds[True], 'iter_4.pth'), osp.join(wds[False], 'iter_4.pth'))


@pytest.fixture(scope='module')
def fp16_run(workspace):
    wd = str(workspace / 'wd_fp16')
    out = run_tool([
        'train.py',
        str(workspace / 'sign.py'), '--work-dir', wd, '--amp-dtype', 'float16'
    ], workspace)
    return wd, out


def test_amp_float16_on_a_cpu_warns_and_scales_per_wrapper(fp16_run):
    wd, out = fp16_run
    assert 'float16 autocast on a CPU is slow' in out
    assert 'float16 autocast on cpu, a dynamic loss scale per optimizer ' \
        'wrapper' in out
    check_all_stages(out)
    optim = torch.load(
        osp.join(wd, 'iter_10.pth'), map_location='cpu')['optimizer']
    assert set(optim) == WRAPPERS
    scales = {n: s['loss_scaler']['scale'] for n, s in optim.items()}
    # a scale halves per skipped step; no wrapper skipped every step
    assert all(2.0**6 <= v <= 2.0**16 for v in scales.values()), scales


def test_amp_float16_resume_restores_every_scaler(workspace, fp16_run):
    """Killed after iteration 5 (transfer), resumed: the same weights and
    loss scales as the uninterrupted run."""
    wd, _ = fp16_run
    wd2 = workspace / 'wd_fp16_resumed'
    wd2.mkdir()
    ckpt = wd2 / 'iter_5.pth'
    shutil.copy(osp.join(wd, 'iter_5.pth'), ckpt)
    (wd2 / 'last_checkpoint').write_text(str(ckpt))
    out = run_tool([
        'train.py',
        str(workspace / 'sign.py'), '--work-dir',
        str(wd2), '--resume', '--amp-dtype', 'float16'
    ], workspace)
    assert 'resumed at 6' in out
    assert_same_weights(str(wd2 / 'iter_10.pth'), osp.join(wd, 'iter_10.pth'))
    want, got = (
        torch.load(p, map_location='cpu')['optimizer']
        for p in (osp.join(wd, 'iter_10.pth'), str(wd2 / 'iter_10.pth')))
    for name in WRAPPERS:
        assert got[name]['loss_scaler'] == want[name]['loss_scaler'], name


def test_amp_dtype_is_checked_before_the_run(workspace):
    with pytest.raises(AssertionError, match='invalid choice'):
        run_tool([
            'train.py',
            str(workspace / 'sign.py'), '--work-dir',
            str(workspace / 'wd_bad'), '--amp-dtype', 'float64'
        ], workspace)
    assert not osp.exists(str(workspace / 'wd_bad' / 'iter_1.pth'))


def test_resuming_float16_without_amp_says_what_it_does(workspace, fp16_run):
    """--resume of a float16 run without --amp continues in
    float32 (a choice), and the log says so, with the loss scales dropped
    and the flag that keeps the run's precision."""
    wd, _ = fp16_run
    wd2 = workspace / 'wd_fp16_as_fp32'
    wd2.mkdir()
    ckpt = wd2 / 'iter_5.pth'
    shutil.copy(osp.join(wd, 'iter_5.pth'), ckpt)
    (wd2 / 'last_checkpoint').write_text(str(ckpt))
    out = run_tool([
        'train.py',
        str(workspace / 'sign.py'), '--work-dir',
        str(wd2), '--resume'
    ], workspace)
    assert 'the checkpoint was trained with float16 mixed precision and ' \
        'this run has none (no --amp): it continues in float32; the ' \
        'float16 loss scales of' in out
    assert 'resume with --amp --amp-dtype float16' in out
    assert 'Mixed precision:' not in out  # float32 indeed
    optim = torch.load(
        str(wd2 / 'iter_10.pth'), map_location='cpu')['optimizer']
    assert not any('loss_scaler' in s for s in optim.values())
    # the run resumed with its own precision logs nothing of the kind
    wd3 = workspace / 'wd_fp16_again'
    wd3.mkdir()
    shutil.copy(osp.join(wd, 'iter_5.pth'), wd3 / 'iter_5.pth')
    (wd3 / 'last_checkpoint').write_text(str(wd3 / 'iter_5.pth'))
    out = run_tool([
        'train.py',
        str(workspace / 'sign.py'), '--work-dir',
        str(wd3), '--resume', '--amp-dtype', 'float16', '--cfg-options',
        'train_cfg.stages.2.iters=1'
    ], workspace)
    assert 'mixed precision and this run has none' not in out
    assert 'trained in float32' not in out
