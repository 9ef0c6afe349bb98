"""The training loop that owns the stage plan
(:mod:`mmseg_sign.engine.runner.stage_plan_loop`): it exposes the plan
(``runner.train_loop.plan``), runs as long as it, follows it when the
command line changes it, checks it before iteration 1, and a plan can grow:
a run resumed after stages and their optimizers were added to the config
continues (the new optimizer wrappers start fresh)."""
import os.path as osp
from types import SimpleNamespace

import pytest
from e2e_utils import run_tool, toy_workspace, write_config

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TRAIN_ONLY = """
stages = [dict(name='train', iters=2)]
train_cfg = dict(stages=stages, val_interval=100)
optim_wrapper = dict(
    _delete_=True, constructor='ModuleGroupOptimWrapperConstructor',
    segmentor=dict(optimizer=dict(type='SGD', lr=0.01, momentum=0.9),
                   modules=['backbone', 'neck']),
    generator=dict(optimizer=dict(type='Adam', lr=1e-3),
                   modules=['decode_head.generator']),
    discriminator=dict(optimizer=dict(type='Adam', lr=1e-3),
                       modules=['decode_head.discriminator',
                                'decode_head.trunk', 'decode_head.conv_seg']))
param_scheduler = dict(_delete_=True, segmentor=[], generator=[],
                       discriminator=[])
default_hooks = dict(checkpoint=dict(interval=2))
"""
WITH_TRANSFER = """
stages = [dict(name='train', iters=2),
          dict(name='transfer', iters=2, mode='alternate', block_iters=1)]
train_cfg = dict(stages=stages, val_interval=100)
default_hooks = dict(checkpoint=dict(interval=2))
"""


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, toy_root):
    return toy_workspace(tmp_path_factory, toy_root, 'ws')


def test_resume_after_adding_a_stage_and_its_optimizers(workspace):
    """Before: KeyError 'transfer' from mmengine's scheduler resume."""
    wd = str(workspace / 'wd_grow')
    a = write_config(workspace / 'a.py', 'configs/sign/sign_toy.py',
                     TRAIN_ONLY)
    run_tool(['train.py', a, '--work-dir', wd], workspace)
    b = write_config(workspace / 'b.py', 'configs/sign/sign_toy.py',
                     WITH_TRANSFER)
    out = run_tool(['train.py', b, '--work-dir', wd, '--resume'], workspace)
    assert 'resumed epoch: 0, iter: 2' in out
    assert "no state for the optimizer wrappers ['transfer', " \
        "'transfer_generator', 'self_train', 'self_train_generator', " \
        "'self_train_discriminator']" in out
    assert "SIGN stage 'transfer' (2/2): iterations 3-4" in out
    assert (workspace / 'wd_grow' / 'iter_4.pth').exists()


def test_plan_without_train_stage_needs_load_from(workspace):
    cfg = write_config(
        workspace / 'c.py', 'configs/sign/sign_toy.py', """
stages = [dict(name='transfer', iters=2, block_iters=1)]
train_cfg = dict(stages=stages, val_interval=100)
""")
    with pytest.raises(
            AssertionError, match="starts with 'transfer'.*"
            'load_from=PATH'):
        run_tool(['train.py', cfg, '--work-dir',
                  str(workspace / 'wd_c')], workspace)
    assert not (workspace / 'wd_c' / 'iter_1.pth').exists()


def test_transfer_needs_unseen_classes(embedding_table):
    """A head whose split has no unseen class cannot learn them (checked
    before iteration 1); a runner stand-in carries only what the check
    reads (the config and the resume flag)."""

    from mmengine.config import Config
    from mmseg.registry import MODELS

    from mmseg_sign.engine.hooks import ClassSplitHook
    from mmseg_sign.structures import StagePlan
    head = MODELS.build(
        dict(
            type='SIGNHead',
            in_channels=8,
            channels=8,
            num_classes=5,
            class_embeddings=embedding_table[0],
            latent_channels=8,
            generator_hidden=(16, ),
            generator_dropout=0.0,
            trunk_channels=16))
    assert not head.unseen_mask.any()
    plan = StagePlan([
        dict(name='train', iters=1),
        dict(name='transfer', iters=2, block_iters=1)
    ])
    runner = SimpleNamespace(
        cfg=Config(), train_loop=SimpleNamespace(plan=plan))
    with pytest.raises(
            ValueError,
            match=r"stages \['transfer'\] learn "
            'the unseen classes, but the split has none'):
        ClassSplitHook._check_unseen_for_plan(runner, head)
    head.set_class_split(['c4'])
    ClassSplitHook._check_unseen_for_plan(runner, head)  # passes


def test_plan_changed_from_the_command_line_is_followed(workspace):
    """The stage plan is the one home of the iteration counts: shortened
    with --cfg-options alone, the run, its PolyLR and the transfer
    schedulers follow it. The transfer and self-training schedulers are
    given without begin / end, as in the paper schedule base: before, the
    step mmengine takes when it builds a scheduler at iteration 0 was
    counted in the later stage (MultiStepLR fired one step early, and
    PolyLR divided by zero at the self-training stage's last iteration)."""
    import json

    cfg = write_config(
        workspace / 'e.py', 'configs/sign/sign_toy.py', """
default_hooks = dict(logger=dict(interval=1), checkpoint=dict(interval=100))
train_cfg = dict(val_interval=1000, val_at_stage_end=False,
                 stages=[dict(name='train', iters=600),
                         dict(name='transfer', iters=200),
                         dict(name='self_train', iters=200)])
param_scheduler = dict(
    transfer=[dict(type='MultiStepLR', gamma=0.1, by_epoch=False,
                   milestones=[2])],
    self_train=[dict(type='PolyLR', power=0.9, eta_min=0.0,
                     by_epoch=False)])
""")
    wd = workspace / 'wd_e'
    out = run_tool([
        'train.py', cfg, '--work-dir',
        str(wd), '--cfg-options', 'train_cfg.stages.0.iters=6',
        'train_cfg.stages.1.iters=4', 'train_cfg.stages.1.block_iters=2',
        'train_cfg.stages.2.iters=4'
    ], workspace)
    # the run lasts the plan's 14 iterations (StagePlanTrainLoop)
    assert 'Iter(train) [14/14]' in out
    assert (wd / 'iter_14.pth').exists()
    records = []
    for path in wd.glob('*/vis_data/scalars.json'):
        with open(path) as f:
            records += [json.loads(line) for line in f]
    lr = {r['step']: r for r in records if 'segmentor.lr' in r}
    assert sorted(lr) == list(range(1, 15))
    # PolyLR (power 0.9, eta_min 1e-4) over the 6 train iterations
    base, eta = 0.01, 1e-4
    for it in range(1, 7):
        want = (base - eta) * (1 - (it - 1) / 5)**0.9 + eta
        assert abs(lr[it]['segmentor.lr'] - want) < 1e-9, it
    # the transfer scheduler spans iterations 7-10: x0.1 at its 3rd step
    assert [lr[i]['transfer.lr']
            for i in range(7, 11)] == pytest.approx([1e-3, 1e-3, 1e-4, 1e-4])
    # self-training PolyLR (power 0.9, eta_min 0) over iterations 11-14
    st_base = lr[1]['self_train.lr']  # untouched until its stage
    assert [lr[i]['self_train.lr'] for i in range(1, 11)] == [st_base] * 10
    assert [lr[i]['self_train.lr'] for i in range(11, 15)
            ] == pytest.approx([st_base * (1 - k / 3)**0.9 for k in range(4)],
                               abs=1e-12)


@pytest.mark.parametrize('kind, kwargs', [
    ('LinearLR', dict(start_factor=0.5)),
    ('PolyLR', dict(power=0.9, eta_min=0.0)),
    ('MultiStepLR', dict(milestones=[1, 3], gamma=0.1)),
])
def test_respanned_scheduler_equals_one_built_with_the_span(kind, kwargs):
    """A scheduler built at iteration 0 without begin / end and given the
    span [3, 7) by the loop steps exactly like one built with it."""
    import torch
    from mmengine.optim import PolyLR  # noqa: F401 (registers)
    from mmengine.registry import PARAM_SCHEDULERS

    from mmseg_sign.engine.schedulers import respan

    def build(**span):
        param = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([param], lr=0.1)
        scheduler = PARAM_SCHEDULERS.build(
            dict(
                type=kind,
                optimizer=optimizer,
                by_epoch=False,
                **kwargs,
                **span))
        return optimizer, scheduler

    respanned, reference = build(), build(begin=3, end=7)
    respan(respanned[1], 3, 7)
    lrs = ([], [])
    for _ in range(9):  # iterations 0-8: before, inside and after the span
        for (optimizer, scheduler), values in zip((respanned, reference), lrs):
            values.append(optimizer.param_groups[0]['lr'])
            optimizer.step()
            scheduler.step()
    assert lrs[0] == pytest.approx(lrs[1], abs=1e-15)
    assert len(set(lrs[1])) > 1  # the span changes the value


def test_resume_after_a_wrapper_changed_its_modules(workspace):
    """A checkpoint whose self_train wrapper held C too (this project's
    earlier configs): --resume with today's wrappers restarts the
    wrapper that never stepped instead of failing in torch's
    load_state_dict."""
    wd = str(workspace / 'wd_regroup')
    old = write_config(
        workspace / 'old.py', 'configs/sign/sign_toy.py', """
stages = [dict(name='train', iters=2)]
train_cfg = dict(stages=stages, val_interval=100)
optim_wrapper = dict(self_train=dict(
    modules=['backbone', 'neck', 'decode_head.trunk', 'decode_head.conv_seg']))
default_hooks = dict(checkpoint=dict(interval=2))
""")
    run_tool(['train.py', old, '--work-dir', wd], workspace)
    now = write_config(
        workspace / 'now.py', 'configs/sign/sign_toy.py', """
stages = [dict(name='train', iters=2),
          dict(name='transfer', iters=2, block_iters=1),
          dict(name='self_train', iters=2)]
train_cfg = dict(stages=stages, val_interval=100)
default_hooks = dict(checkpoint=dict(interval=2))
""")
    out = run_tool(['train.py', now, '--work-dir', wd, '--resume'], workspace)
    assert 'optim_wrapper.self_train now updates other parameters' in out
    assert (workspace / 'wd_regroup' / 'iter_6.pth').exists()


def test_split_hook_refuses_a_transfer_plan_without_unseen_classes(
        embedding_table):
    """A training dataset whose metainfo has no split at all: the plan's
    transfer stage still needs unseen classes, before iteration 1."""

    from mmengine.config import Config
    from mmseg.registry import MODELS

    from mmseg_sign.engine.hooks import ClassSplitHook
    from mmseg_sign.structures import StagePlan
    head = MODELS.build(
        dict(
            type='SIGNHead',
            in_channels=8,
            channels=8,
            num_classes=5,
            class_embeddings=embedding_table[0],
            latent_channels=8,
            generator_hidden=(16, ),
            generator_dropout=0.0,
            trunk_channels=16))
    plan = StagePlan([
        dict(name='train', iters=1),
        dict(name='transfer', iters=2, block_iters=1)
    ])
    dataset = SimpleNamespace(metainfo=dict(classes=embedding_table[1]))
    runner = SimpleNamespace(
        cfg=Config(),
        hooks=[],
        train_loop=SimpleNamespace(plan=plan),
        model=SimpleNamespace(decode_head=head),
        train_dataloader=SimpleNamespace(dataset=dataset))
    with pytest.raises(
            ValueError,
            match=r"stages \['transfer'\] learn "
            'the unseen classes, but the split has none'):
        ClassSplitHook().before_train(runner)


def test_stage_plan_loop_asks_for_its_companion_hooks():
    """A config written from scratch with the loop alone: the run stops
    before training and says which hooks to add."""
    from mmseg_sign.engine.runner import StagePlanTrainLoop
    runner = SimpleNamespace(hooks=[])
    with pytest.raises(
            ValueError,
            match=r"sign_split=dict\(type="
            r"'ClassSplitHook'\).*sign_teacher=dict\(type="
            r"'SelfTrainingTeacherHook'\)"):
        StagePlanTrainLoop._check_companion_hooks(runner)
    from mmseg_sign.engine.hooks import (ClassSplitHook, ResumeCheckHook,
                                         SelfTrainingTeacherHook)
    runner.hooks += [
        ClassSplitHook(),
        ResumeCheckHook(),
        SelfTrainingTeacherHook()
    ]
    StagePlanTrainLoop._check_companion_hooks(runner)  # complete


def test_the_loop_owns_the_plan(toy_root, tmp_path):
    """``train_cfg.stages`` is parsed once, by the loop, which mmengine's
    Runner builds from the shipped config: ``--cfg-options
    train_cfg.stages.1.iters=50`` changes the transfer stage and the run's
    length, and nothing else holds a plan."""
    from e2e_utils import REPO
    from mmengine.config import Config
    from mmengine.runner import Runner
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.merge_from_dict({'train_cfg.stages.1.iters': 50})
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        cfg[loader].dataset.data_root = toy_root
        cfg[loader].num_workers = 0
        cfg[loader].persistent_workers = False
    cfg.model.decode_head.class_embeddings = osp.join(toy_root,
                                                      'class_embeddings.npz')
    cfg.work_dir = str(tmp_path / 'wd')
    assert 'stages' not in cfg and not any('stages' in h
                                           for h in cfg.custom_hooks)
    runner = Runner.from_cfg(cfg)
    plan = runner.train_loop.plan
    assert plan.describe() == 'train 600 + transfer 50 + self_train 400'
    assert runner.train_loop.max_iters == 1050
    assert [s['name'] for s in plan] == ['train', 'transfer', 'self_train']
    assert plan[1]['block_iters'] == 25  # the rest of the stage is kept
