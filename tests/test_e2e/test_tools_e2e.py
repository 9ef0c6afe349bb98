"""tools/train.py and tools/test.py end to end on the toy data: a stock
mmseg FCN with GZSLIoUMetric, SIGN through both stages, --resume
(bit-exact against an uninterrupted run) and 2-process training."""
import os
import os.path as osp
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tool_server
import torch
from e2e_utils import (REAL_LOADERS, REPO, SIGN_SHORT, assert_same_weights,
                       last_metrics, load_state, run_tool, short_plan,
                       toy_workspace, write_config)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, toy_root):
    """A directory with data/toy, as a user's checkout would have."""
    return toy_workspace(tmp_path_factory, toy_root, 'ws')


def test_fcn_train_resume_test(workspace):
    cfg = write_config(
        workspace / 'fcn.py', 'configs/baselines/fcn_r18-tiny_toy.py',
        'train_cfg = dict(max_iters=6, val_interval=6)\n'
        'default_hooks = dict(checkpoint=dict(interval=3))\n')
    wd = str(workspace / 'wd_fcn')
    out = run_tool(['train.py', cfg, '--work-dir', wd], workspace)
    assert 'mIoU_unseen' in out and osp.exists(osp.join(wd, 'iter_6.pth'))
    out = run_tool([
        'train.py', cfg, '--work-dir', wd, '--resume', '--cfg-options',
        'train_cfg.max_iters=9'
    ], workspace)
    assert 'resumed epoch: 0, iter: 6' in out
    assert osp.exists(osp.join(wd, 'iter_9.pth'))
    test_wd = str(workspace / 'wd_fcn_test')
    out = run_tool([
        'test.py', cfg,
        osp.join(wd, 'iter_9.pth'), '--work-dir', test_wd, '--show-dir',
        str(workspace / 'vis_fcn'), '--out',
        str(workspace / 'preds_fcn')
    ], workspace)
    metrics = last_metrics(test_wd)
    assert {'mIoU', 'mIoU_seen', 'mIoU_unseen', 'hIoU', 'aAcc'} <= set(metrics)
    assert '| Split  |' in out and 'unseen' in out
    assert len(list((workspace / 'preds_fcn').glob('*.png'))) == 8
    assert list((workspace / 'vis_fcn').rglob('*.png'))


@pytest.fixture(scope='module')
def sign_run(workspace):
    """An uninterrupted 4 + 3 + 3 iteration SIGN run (train, transfer,
    AST) with every checkpoint."""
    cfg = write_config(workspace / 'sign.py', 'configs/sign/sign_toy.py',
                       SIGN_SHORT + REAL_LOADERS)
    wd = str(workspace / 'wd_sign')
    out = run_tool(['train.py', cfg, '--work-dir', wd], workspace)
    return cfg, wd, out


def test_sign_runs_all_stages(sign_run):
    cfg, wd, out = sign_run
    assert "SIGN stage 'train' (1/3): iterations 1-4" in out
    assert "SIGN stage 'transfer' (2/3): iterations 5-7" in out
    assert "SIGN stage 'self_train' (3/3): iterations 8-10" in out
    assert 'loss_mmd' in out and 'loss_ce_synth' in out and 'hIoU' in out
    assert 'st_pixels' in out and 'st_weight' in out
    # the teacher is saved with the self-training checkpoints only
    assert 'sign_teacher' not in torch.load(
        osp.join(wd, 'iter_7.pth'), map_location='cpu')
    teacher = torch.load(
        osp.join(wd, 'iter_9.pth'), map_location='cpu')['sign_teacher']
    s7 = load_state(osp.join(wd, 'iter_7.pth'))
    for key in s7:  # = the model when the stage started
        assert torch.equal(teacher[key], s7[key]), key
    # transfer: E and SIM frozen (BN statistics included); C, D (shared
    # trunk) and G train in the first block, C alone in the second
    s4, s6, s7 = (load_state(osp.join(wd, f'iter_{i}.pth')) for i in (4, 6, 7))
    changed = {k.split('.')[1] for k in s4 if not torch.equal(s4[k], s6[k])}
    assert {
        k
        for k in s4
        if not torch.equal(s4[k], s6[k]) and not k.startswith('decode_head.')
    } == set()
    assert changed == {'trunk', 'conv_seg', 'discriminator', 'generator'}
    changed = {k.split('.')[1] for k in s6 if not torch.equal(s6[k], s7[k])}
    assert changed == {'trunk', 'conv_seg'}
    # self-training as released (docs/reproduction.md): the train stage's
    # update on pseudo labels, so its iterations (8-10) log the KL, MMD and
    # adversarial losses and every part of the model moves, G and D too
    st_logs = [
        line for line in out.splitlines()
        if re.search(r'Iter\(train\) \[\s*(8|9|10)/10\]', line)
    ]
    assert len(st_logs) == 3
    for line in st_logs:
        for key in ('loss_ce:', 'loss_kld:', 'loss_mmd:', 'loss_adv_g:',
                    'loss_adv_d:', 'loss_ce_d:', 'st_pixels:'):
            assert key in line, (key, line)
        assert 'loss_ce_synth' not in line
    s10 = load_state(osp.join(wd, 'iter_10.pth'))
    changed = {
        k.split('.')[0]
        if not k.startswith('decode_head.') else k.split('.')[1]
        for k in s7 if not torch.equal(s7[k], s10[k])
    }
    assert {
        'backbone', 'neck', 'trunk', 'conv_seg', 'discriminator', 'generator'
    } <= changed


@pytest.mark.parametrize('killed_after', [2, 5, 9])
def test_sign_resume_matches_uninterrupted(workspace, sign_run, killed_after):
    """A run that died after iteration 2 (train stage), 5 (just after the
    switch to transfer) or 9 (inside self-training, teacher restored)
    continues with --resume to the same weights, with the shipped loaders'
    persistent workers (REAL_LOADERS)."""
    cfg, wd, _ = sign_run
    wd2 = workspace / f'wd_sign_killed_{killed_after}'
    wd2.mkdir()
    ckpt = wd2 / f'iter_{killed_after}.pth'
    shutil.copy(osp.join(wd, f'iter_{killed_after}.pth'), ckpt)
    (wd2 / 'last_checkpoint').write_text(str(ckpt))
    out = run_tool(['train.py', cfg, '--work-dir',
                    str(wd2), '--resume'], workspace)
    stage = {2: 'train', 5: 'transfer', 9: 'self_train'}[killed_after]
    assert f"SIGN stage '{stage}'" in out
    assert f'resumed at {killed_after + 1}' in out
    if killed_after < 7:  # the resumed process starts its val workers
        assert 'Validation at the end of stage' in out
    assert_same_weights(str(wd2 / 'iter_10.pth'), osp.join(wd, 'iter_10.pth'))
    # every optimizer state was restored, not rebuilt
    optim = torch.load(
        str(wd2 / 'iter_10.pth'), map_location='cpu')['optimizer']
    assert set(optim) == {
        'segmentor', 'generator', 'discriminator', 'transfer',
        'transfer_generator', 'self_train', 'self_train_generator',
        'self_train_discriminator'
    }


# train 2, transfer 4 in blocks of 1 (real, synthetic, real, synthetic),
# self-training 2: a checkpoint after every iteration
SIGN_BLOCKS = short_plan(2, 4, 2) + """
default_hooks = dict(
    checkpoint=dict(interval=1, max_keep_ckpts=-1),
    logger=dict(interval=1))
"""


@pytest.fixture(scope='module')
def blocks_run(workspace):
    cfg = write_config(workspace / 'sign_blocks.py',
                       'configs/sign/sign_toy.py', SIGN_BLOCKS + REAL_LOADERS)
    wd = str(workspace / 'wd_sign_blocks')
    out = run_tool(['train.py', cfg, '--work-dir', wd], workspace)
    assert "SIGN stage 'transfer' (2/3): iterations 3-6" in out
    return cfg, wd


@pytest.mark.parametrize('killed_after', range(1, 8))
def test_sign_resume_is_exact_at_every_checkpoint(workspace, blocks_run,
                                                  killed_after):
    """--resume from each checkpoint of a run whose transfer alternates
    real and synthetic blocks (iterations 3-6) ends with the uninterrupted
    run's weights, with the shipped 2-worker loaders. Resuming after the
    first synthetic block (4 or 5) once refilled the feature-size cache
    with an extra SIM pass (a draw of z) at iteration 6, and the run
    diverged from there: the cache travels in the
    checkpoint."""
    cfg, wd = blocks_run
    ckpt = torch.load(
        osp.join(wd, f'iter_{killed_after}.pth'),
        map_location='cpu',
        weights_only=False)
    # filled at the first synthetic block (iteration 4), kept from then on
    assert ('sign_feature_sizes' in ckpt) == (killed_after >= 4)
    if killed_after >= 4:
        assert ckpt['sign_feature_sizes'] == [[64, 64, 8, 8]]
    wd2 = workspace / f'wd_sign_blocks_killed_{killed_after}'
    wd2.mkdir()
    shutil.copy(osp.join(wd, f'iter_{killed_after}.pth'), wd2)
    (wd2 / 'last_checkpoint').write_text(str(wd2 / f'iter_{killed_after}.pth'))
    out = run_tool(['train.py', cfg, '--work-dir',
                    str(wd2), '--resume'], workspace)
    assert 'resumed epoch: 0, iter: %d' % killed_after in out
    for i in range(killed_after + 1, 9):
        assert_same_weights(
            str(wd2 / f'iter_{i}.pth'), osp.join(wd, f'iter_{i}.pth'))


def test_sign_test_tool_and_inference_api(workspace, sign_run, monkeypatch):
    cfg, wd, _ = sign_run
    monkeypatch.chdir(workspace)  # the config's data/toy paths
    test_wd = str(workspace / 'wd_sign_test')
    run_tool([
        'test.py', cfg,
        osp.join(wd, 'iter_10.pth'), '--work-dir', test_wd, '--show-dir',
        str(workspace / 'vis_sign')
    ], workspace)
    assert 'hIoU' in last_metrics(test_wd)
    from mmseg.apis import inference_model, init_model
    model = init_model(cfg, osp.join(wd, 'iter_10.pth'), device='cpu')
    img = str(workspace / 'data/toy/JPEGImages/val_00000.png')
    result = inference_model(model, img)
    assert result.pred_sem_seg.data.shape[-2:] == (64, 64)
    assert int(result.pred_sem_seg.data.max()) < 10
    from mmseg.apis import MMSegInferencer
    inferencer = MMSegInferencer(
        cfg, osp.join(wd, 'iter_10.pth'), device='cpu')
    preds = inferencer(img, return_datasamples=True)
    torch.testing.assert_close(preds.pred_sem_seg.data,
                               result.pred_sem_seg.data)


def test_sign_two_process_training(workspace):
    """tools/train.py --launcher pytorch with 2 CPU processes (gloo): both
    stages run and the ranks keep identical weights."""
    cfg = write_config(
        workspace / 'sign_ddp.py', 'configs/sign/sign_toy.py',
        SIGN_SHORT + "\ntrain_dataloader = dict(batch_size=4)\n")
    wd = str(workspace / 'wd_ddp')
    out = run_tool(['train.py', cfg, '--work-dir', wd],
                   workspace,
                   launcher='pytorch')
    assert 'gloo' in out
    assert "SIGN stage 'self_train' (3/3)" in out
    assert osp.exists(osp.join(wd, 'iter_10.pth'))
    # killed after iteration 5 (transfer), resumed with 2 processes: the
    # same weights (every rank restores its own RNG state, and each step
    # starts from rank 0's BN statistics, as DDP's broadcast_buffers)
    wd2 = workspace / 'wd_ddp_killed_5'
    wd2.mkdir()
    shutil.copy(osp.join(wd, 'iter_5.pth'), wd2 / 'iter_5.pth')
    (wd2 / 'last_checkpoint').write_text(str(wd2 / 'iter_5.pth'))
    run_tool(['train.py', cfg, '--work-dir',
              str(wd2), '--resume'],
             workspace,
             launcher='pytorch')
    assert_same_weights(str(wd2 / 'iter_10.pth'), osp.join(wd, 'iter_10.pth'))


def test_pseudo_label_quality_tool(workspace, sign_run):
    """tools/analysis/pseudo_label_quality.py on the teacher of the SIGN run
    (its checkpoint when self-training starts). With AST every ignored
    pixel gets a pseudo label, so the tool's counts must equal those read
    straight from the label files: unseen-object and void pixels of the
    training images."""
    import json

    import numpy as np
    from PIL import Image
    cfg, wd, _ = sign_run
    report_path = workspace / 'quality.json'
    out = run_tool([
        'analysis/pseudo_label_quality.py', cfg,
        osp.join(wd, 'iter_7.pth'), '--out',
        str(report_path)
    ], workspace)
    assert 'accuracy on unseen objects' in out
    report = json.loads(report_path.read_text())
    root = workspace / 'data' / 'toy'
    names = (root / 'ImageSets/Segmentation/train.txt').read_text().split()
    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    unseen_ids = [TOY_CLASSES.index(c) for c in TOY_UNSEEN]
    on_unseen = void = 0
    for name in names:
        label = np.array(
            Image.open(root / 'SegmentationClass' / f'{name}.png'))
        on_unseen += int(np.isin(label, unseen_ids).sum())
        void += int((label == 255).sum())
    assert report['images'] == len(names)
    assert report['pseudo_pixels'] == on_unseen + void
    assert report['share_on_void'] == pytest.approx(void / (on_unseen + void))
    assert report['coverage_of_unseen'] == pytest.approx(1.0)
    w = report['weights']
    assert w['right']['pixels'] + w['wrong']['pixels'] == on_unseen
    assert w['void']['pixels'] == void
    assert report['accuracy_on_unseen'] == pytest.approx(w['right']['pixels'] /
                                                         on_unseen)
    for group in w.values():  # AST weights: (0, 1]
        assert 0 < group['q10'] <= group['q90'] <= 1


# ---------------------------------------------------------------- faults
def _start(cfg, wd, workspace, resume=False):
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools', 'train.py'), cfg, '--work-dir',
        str(wd)
    ] + (['--resume'] if resume else [])
    log = open(str(wd) + f'.{time.monotonic_ns()}.log', 'w')
    return subprocess.Popen(
        cmd,
        cwd=workspace,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, PYTHONWARNINGS='ignore', OMP_NUM_THREADS='1'))


def _last(wd) -> int:
    """The iteration of the run's last checkpoint (0: none yet)."""
    path = osp.join(wd, 'last_checkpoint')
    if not osp.exists(path):
        return 0
    name = open(path).read().strip()
    return int(re.search(r'iter_(\d+)\.pth$', name).group(1)) if name else 0


def _kill_when(proc, ready, timeout=300) -> bool:
    """SIGKILL ``proc`` (the main process only: its dataloader workers
    live on for a while) as soon as ``ready()``; False if it ended first."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.001)
    proc.kill()
    proc.wait()
    return False


def test_sign_killed_in_every_stage_resumes_exactly(workspace, sign_run):
    """Real SIGKILLs: during a checkpoint write, then in the transfer stage,
    then in self-training; each --resume starts at once (orphaned workers
    hold no lock) and the run ends with the uninterrupted run's weights.
    Every checkpoint left behind is complete (atomic writes)."""
    cfg, wd_ref, _ = sign_run
    for attempt in range(3):  # a write lasts milliseconds: retry to catch
        wd = workspace / f'wd_sign_sigkill_{attempt}'
        wd.mkdir()

        def writing():  # a checkpoint's temporary file exists
            return any(n.startswith('.iter_') for n in os.listdir(wd))

        caught = _kill_when(_start(cfg, wd, workspace), writing)
        if caught:
            break
    assert caught, 'never caught a checkpoint write in progress'
    for name in os.listdir(wd):
        if re.fullmatch(r'iter_\d+\.pth', name):
            torch.load(str(wd / name), map_location='cpu')  # complete
    for stage_start in (5, 8):  # transfer, then self-training
        proc = _start(cfg, wd, workspace, resume=True)
        if _last(wd) < stage_start:
            assert _kill_when(proc, lambda: _last(wd) >= stage_start)
        else:
            proc.kill()
            proc.wait()
    out = run_tool(['train.py', cfg, '--work-dir',
                    str(wd), '--resume'], workspace)
    assert 'resumed' in out
    # the unfinished write's temporary file is gone
    assert not [n for n in os.listdir(wd) if n.startswith('.iter_')]
    assert_same_weights(wd / 'iter_10.pth', osp.join(wd_ref, 'iter_10.pth'))


def test_checkpoint_write_failure_keeps_the_previous(workspace, sign_run):
    """A file-size limit (as a full disk) while saving a checkpoint: the
    run stops naming the file, the previous checkpoint and last_checkpoint
    are intact, no partial file is left, and --resume continues."""
    cfg, wd_ref, _ = sign_run
    wd = workspace / 'wd_sign_full_disk'
    wd.mkdir()
    first = wd / 'iter_2.pth'
    shutil.copy(osp.join(wd_ref, 'iter_2.pth'), first)
    (wd / 'last_checkpoint').write_text(str(first))
    digest = first.read_bytes()
    limit = first.stat().st_size // 2

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = tool_server.run([
        sys.executable,
        osp.join(REPO, 'tools', 'train.py'), cfg, '--work-dir',
        str(wd), '--resume'
    ],
                           cwd=workspace,
                           capture_output=True,
                           text=True,
                           preexec_fn=small_files,
                           env=dict(
                               os.environ,
                               PYTHONWARNINGS='ignore',
                               OMP_NUM_THREADS='1'))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert re.search(
        r'Could not write \S*iter_3\.pth \(File too large\); '
        r'nothing was written in its place and the earlier '
        r'checkpoints .* are intact', out), out[-3000:]
    assert first.read_bytes() == digest
    assert _last(wd) == 2
    assert sorted(n for n in os.listdir(wd)
                  if n.endswith('.pth')) == ['iter_2.pth']
    run_tool(['train.py', cfg, '--work-dir', str(wd), '--resume'], workspace)
    assert_same_weights(wd / 'iter_10.pth', osp.join(wd_ref, 'iter_10.pth'))


def test_sign_resume_with_moved_rng_states(workspace, sign_run):
    """--resume from a checkpoint whose generator states are no longer CPU
    byte tensors (as mmengine's load onto a GPU leaves them: there a CUDA
    byte tensor; here cast to int64, the same TypeError from
    torch.set_rng_state before the fix) and which holds a GPU run's CUDA
    state: the CPU state is restored as bytes, the CUDA one is skipped with
    a log line on this GPU-less machine, and the run ends with the
    uninterrupted run's weights."""
    cfg, wd, _ = sign_run
    wd2 = workspace / 'wd_sign_moved_rng'
    wd2.mkdir()
    ckpt = torch.load(
        osp.join(wd, 'iter_5.pth'), map_location='cpu', weights_only=False)
    state = ckpt['torch_rng_state']
    state['cpu'] = state['cpu'].to(torch.int64)
    state['cuda'] = [torch.get_rng_state()[:16].clone()]  # a GPU run's
    torch.save(ckpt, wd2 / 'iter_5.pth')
    (wd2 / 'last_checkpoint').write_text(str(wd2 / 'iter_5.pth'))
    out = run_tool(['train.py', cfg, '--work-dir',
                    str(wd2), '--resume'], workspace)
    assert 'resumed at 6' in out
    assert 'the CPU generator is restored, the CUDA one is not' in out
    assert_same_weights(str(wd2 / 'iter_10.pth'), osp.join(wd, 'iter_10.pth'))


def test_cpu_randomness_hook_changes_nothing_on_a_cpu(workspace, sign_run):
    """CPURandomnessHook (docs/gpu.md: a GPU run initialised and drawing on
    the CPU, as a CPU run of its seed) replays the CPU's own draws: on a
    CPU the run ends with the same weights to the bit."""
    cfg, wd, _ = sign_run
    cfg2 = write_config(
        workspace / 'sign_cpu_draws.py', 'configs/sign/sign_toy.py',
        SIGN_SHORT + REAL_LOADERS + "custom_hooks = [*_base_.custom_hooks, "
        "dict(type='CPURandomnessHook')]\n")
    wd2 = workspace / 'wd_sign_cpu_draws'
    run_tool(['train.py', cfg2, '--work-dir', str(wd2)], workspace)
    assert_same_weights(str(wd2 / 'iter_10.pth'), osp.join(wd, 'iter_10.pth'))


def test_spnet_config_with_a_sign_checkpoint(workspace, sign_run):
    """--resume of an SPNet run from a SIGN checkpoint is a clear
    error naming both models' weights (it was a raw KeyError on an
    optimizer state); load_from one loads what matches and says so in one
    warning with the counts (fine-tuning from another model is allowed)."""
    _, wd, _ = sign_run
    spnet = write_config(workspace / 'spnet.py',
                         'configs/baselines/spnet_toy.py',
                         'train_cfg = dict(max_iters=2, val_interval=2)\n')
    res = workspace / 'wd_spnet_resume'
    res.mkdir()
    shutil.copy(osp.join(wd, 'iter_4.pth'), res / 'iter_4.pth')
    (res / 'last_checkpoint').write_text(str(res / 'iter_4.pth'))
    with pytest.raises(AssertionError) as err:
        run_tool([
            'train.py', spnet, '--work-dir',
            str(res), '--resume', '--cfg-options', 'train_cfg.max_iters=6'
        ], workspace)
    log = str(err.value)
    assert 'it was written by another model than' in log
    assert 'missing from the checkpoint: 8 of the model' in log
    assert 'unexpected in the checkpoint (not in the model)' in log
    assert 'give them as load_from=PATH in another work dir' in log
    assert "KeyError: 'param_groups'" not in log
    assert not (res / 'iter_6.pth').exists()
    out = run_tool([
        'train.py', spnet, '--work-dir',
        str(workspace / 'wd_spnet_load'), '--cfg-options',
        f'load_from={osp.join(wd, "iter_4.pth")}'
    ], workspace)
    assert 'the checkpoint matches this model in part; the weights that ' \
        'match are loaded, the others keep their initialisation' in out
    assert 'missing from the checkpoint: 8 of the model' in out
    # growing: an SPNet config with the SIGN checkpoint, and with an SPNet
    # checkpoint (no SIGN head to grow): one-line errors before any work
    spnet_ckpt = osp.join(workspace, 'wd_spnet_load', 'iter_2.pth')
    from mmseg_sign.embeddings import (read_class_embeddings,
                                       save_class_embeddings)
    toy_table = osp.join(workspace, 'data', 'toy', 'class_embeddings.npz')
    width = read_class_embeddings(toy_table)[1].shape[1]
    zebra = str(workspace / 'zebra.npz')
    save_class_embeddings(zebra, ['zebra'],
                          np.full((1, width), width**-0.5, np.float32))
    for ckpt, message in [(osp.join(wd, 'iter_10.pth'), 'decode_head'),
                          (spnet_ckpt, 'classes are added to a SIGNHead')]:
        grown = workspace / f'grown_{osp.basename(osp.dirname(ckpt))}'
        with pytest.raises(AssertionError) as err:
            run_tool([
                'add_classes.py', spnet, ckpt, '--classes', 'zebra',
                '--embeddings', zebra, '--out',
                str(grown)
            ], workspace)
        log = str(err.value)
        assert 'error: ' in log and message in log, log
        assert 'Traceback' not in log and not grown.exists()
    # an analysis tool (mmseg's init_model loads leniently) refuses the
    # SIGN checkpoint for the SPNet config instead of reporting on a model
    # whose weights are mostly random
    with pytest.raises(AssertionError) as err:
        run_tool([
            'analysis/unseen_confusion.py', spnet,
            osp.join(wd, 'iter_10.pth')
        ], workspace)
    log = str(err.value)
    assert 'does not match the model of' in log, log
    assert 'missing from the checkpoint: 8 of the model' in log
    assert 'Traceback' not in log and '| class |' not in log
