"""A shortened toy pipeline shows zero-shot transfer, and the benchmark
tool prints every row."""
import os
import os.path as osp
import sys

import pytest
import tool_server
from e2e_utils import REPO, run_tool, write_config

from mmseg_sign.analysis.logs import logged_records

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

# With seed 0, 200 + 200 iterations (the shipped alternating transfer, four
# blocks of 25 on synthetic features) give about 0 unseen mIoU after
# `train` (C never saw an unseen pixel) and well above it after
# `transfer`; the test asks for a margin of 15 points.
MARGIN = 15.0


def val_history(work_dir):
    return logged_records(work_dir, 'mIoU_unseen')


def test_transfer_beats_train_stage_on_unseen(tmp_path):
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    make_toy_dataset(
        str(tmp_path / 'data' / 'toy'), num_train=64, num_val=24, seed=0)
    cfg = write_config(
        tmp_path / 'short.py', 'configs/sign/sign_toy.py', """
stages = [dict(name='train', iters=200),
          dict(name='transfer', iters=200, mode='alternate', block_iters=25)]
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=200,
         by_epoch=False)
])
train_cfg = dict(stages=stages, val_interval=1000)
default_hooks = dict(checkpoint=dict(interval=1000, save_last=False))
randomness = dict(seed=0)
""")
    run_tool(['train.py', cfg, '--work-dir', str(tmp_path / 'wd')], tmp_path)
    history = val_history(str(tmp_path / 'wd'))
    after_train = history[200]['mIoU_unseen']
    after_transfer = history[400]['mIoU_unseen']
    assert after_train < 5.0, history
    assert after_transfer - after_train >= MARGIN, history
    assert history[400]['mIoU_seen'] > 40.0, history


def test_benchmark_tool_prints_every_row():
    cmd = [
        sys.executable,
        osp.join(REPO, 'tools/analysis/benchmark.py'),
        osp.join(REPO,
                 'configs/sign/sign_toy.py'), '--crop', '64', '64', '--sizes',
        '64x64', '80x96', '--warmup', '0', '--repeats', '1', '--batch-size',
        '2', '--cfg-options', 'model.train_cfg.ce_scales=[1.0,0.75]'
    ]
    proc = tool_server.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert 'torch ' in out and 'device cpu' in out
    # the toy config's own stage options: both blocks of its alternating
    # transfer are timed
    for row in (
            'baseline: train iteration',
            'SIGN: train iteration',
            'SIGN: transfer iteration (G, D, C on real + fake seen)',
            'SIGN: transfer iteration (C on synthetic)',
            'SIGN: self_train iteration',
            '| 64x64 |',
            '| 80x96 |',
            'SIGN: train iteration (CE at scales (1.0, 0.75))',
            'SIGN train (single-scale CE) / baseline train',
            # self-training repeats the train update at the config's
            # CE scales: compared with that row
            'self_train / SIGN train (same CE scales)',
            'self_train / SIGN train (single-scale CE)',
            'transfer (mean of its iterations) / SIGN train',
            'inference 80x96: SIGN / baseline'):
        assert row in out, row


def test_self_training_keeps_what_a_weak_teacher_gave(tmp_path):
    """The shipped toy config with its plan shortened
    to 100 + 50 + 50 iterations (a weak teacher: no unseen class after
    transfer) keeps at least 0.9 × its seen mIoU through self-training.
    The paper's AST candidates (every ignored pixel, mostly void here)
    are the control: with them the same teacher (the run resumed from the
    first one's checkpoint at the transfer's end) loses most of it."""
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    make_toy_dataset(str(tmp_path / 'data' / 'toy'), seed=0)
    short = [
        'train_cfg.stages.0.iters=100', 'train_cfg.stages.1.iters=50',
        'train_cfg.stages.2.iters=50', 'default_hooks.checkpoint.interval=150'
    ]
    seen = {}
    for candidates, start in (('predicted_unseen', []), ('ignored',
                                                         ['--resume'])):
        wd = str(tmp_path / f'wd_{candidates}')
        if start:  # the first run's teacher: its checkpoint at 150
            teacher = osp.join(
                str(tmp_path / 'wd_predicted_unseen'), 'iter_150.pth')
            start += ['--cfg-options', f'load_from={teacher}']
        out = run_tool([
            'train.py',
            osp.join(REPO, 'configs/sign/sign_toy.py'), '--work-dir', wd,
            *start[:1], '--cfg-options', *short,
            f'train_cfg.stages.2.candidates={candidates}', *start[2:]
        ], tmp_path)
        history = val_history(wd)
        seen[candidates] = (history.get(150, {}).get('mIoU_seen'),
                            history[200]['mIoU_seen'])
    transfer, self_trained = seen['predicted_unseen']
    assert self_trained >= 0.9 * transfer, seen
    # the control self-trained from the same teacher, iterations 151-200
    assert 'resumed epoch: 0, iter: 150' in out, out[-3000:]
    assert min(logged_records(wd, 'loss')) > 150, seen
    assert seen['ignored'][0] is None  # it did not train up to 150 again
    assert seen['ignored'][1] < 0.5 * transfer, seen


def test_count_iteration_by_hand():
    """benchmark.py --count: a linear layer's forward + backward is three
    matrix products of 2·N·I·O FLOPs each (output, input and weight
    gradients), and every ATen call is counted."""
    import torch

    from mmseg_sign.analysis.op_audit import count_iteration
    lin = torch.nn.Linear(6, 5, bias=False)
    x = torch.randn(4, 6, requires_grad=True)
    calls, flops = count_iteration(lambda: lin(x).sum().backward())
    assert flops == 3 * 2 * 4 * 6 * 5
    assert calls >= 4  # mm forward, sum, its backward, two mm backward


def test_use_foreach_counts_what_a_gpu_launches():
    """benchmark.py --foreach: every optimizer of a wrapper dict steps with
    torch's foreach kernels (a GPU's default), which the count sees as one
    call per operation instead of one per parameter; the update is the
    same."""
    import torch
    from mmengine.optim import OptimWrapper, OptimWrapperDict

    from mmseg_sign.analysis.op_audit import count_iteration, use_foreach

    def setup():
        g = torch.Generator().manual_seed(0)
        params = [
            torch.nn.Parameter(torch.randn(3, generator=g)) for _ in range(6)
        ]
        wrappers = OptimWrapperDict(
            a=OptimWrapper(torch.optim.SGD(params[:3], lr=0.1, momentum=0.9)),
            b=OptimWrapper(torch.optim.Adam(params[3:], lr=0.1)))

        def step():
            for i, p in enumerate(params):
                p.grad = torch.full((3, ), float(i + 1))
            for w in wrappers.values():
                w.step()

        return params, wrappers, step

    loop_params, _, loop_step = setup()
    params, wrappers, step = setup()
    loop_step(), step()  # momentum / Adam states exist
    per_param, _ = count_iteration(loop_step)
    use_foreach(wrappers)
    assert all(g['foreach'] for w in wrappers.values()
               for g in w.optimizer.param_groups)
    foreach, _ = count_iteration(step)
    assert foreach < per_param
    for a, b in zip(params, loop_params):  # two steps each
        torch.testing.assert_close(a, b)


def test_baseline_of_a_multi_level_model_keeps_its_projection():
    """benchmark.py's plain model for a config whose E fuses several levels
    (sign_lite0_camvid-480x360.py): backbone + the same MLPFusion + C, and
    it runs on the backbone's three levels."""
    import torch
    from mmengine.config import Config
    from mmseg.registry import MODELS

    from mmseg_sign.analysis.benchmark import baseline_model_cfg
    cfg = Config.fromfile(
        osp.join(REPO, 'configs/sign/sign_lite0_camvid-480x360.py'))
    cfg.model.decode_head.num_classes = 10
    base = baseline_model_cfg(cfg.model)
    assert base['neck'] == dict(
        type='MLPFusion',
        mlp_channels=128,
        in_channels=[40, 112, 320],
        channels=64,
        in_index=[0, 1, 2])
    base['backbone'] = dict(base['backbone'], init_cfg=None)
    model = MODELS.build(base).eval()
    with torch.no_grad():
        out = model._forward(torch.randn(1, 3, 64, 96))
    assert out.shape == (1, 10, 8, 12)
