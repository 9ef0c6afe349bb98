"""ResumeCheckHook's pure checks, on hand-made checkpoint dicts: the plan
that wrote a checkpoint (its meta, or its dumped config's text, read
without running it), the stage a resumed run continues in, the plan's
end, and the precision a checkpoint was trained in."""
import pytest
from mmengine.config import Config

from mmseg_sign.engine.hooks.resume_check_hook import (
    check_plan_keeps_the_stage, check_plan_reaches, checkpoint_precision,
    saved_stage_plan)
from mmseg_sign.structures import StagePlan

PLAN = [
    dict(name='train', iters=4),
    dict(name='transfer', iters=4, block_iters=2),
    dict(name='self_train', iters=2)
]


def checkpoint(done, plan=None, cfg=None, **meta):
    meta = dict(meta, iter=done)
    if plan is not None:
        meta['sign_stage_plan'] = plan
    if cfg is not None:
        meta['cfg'] = cfg
    return dict(meta=meta, state_dict={})


def dumped(stages):
    """A config's text as a run's checkpoint keeps it (mmengine's
    pretty_text)."""
    return Config(
        dict(
            train_cfg=dict(type='StagePlanTrainLoop', stages=stages),
            model=dict(type='X'))).pretty_text


def test_the_saved_plan_comes_from_the_meta_or_the_dumped_config():
    want = [('train', 4), ('transfer', 4), ('self_train', 2)]
    assert saved_stage_plan(
        checkpoint(5,
                   [['train', 4], ['transfer', 4], ['self_train', 2]])) == want
    # written before the plan travelled in the meta: its config's
    assert saved_stage_plan(checkpoint(5, cfg=dumped(PLAN))) == want
    assert saved_stage_plan(checkpoint(5)) is None  # no plan: not SIGN's
    assert saved_stage_plan(checkpoint(5, cfg='not python (')) is None
    assert saved_stage_plan(dict(state_dict={})) is None


def test_the_dumped_config_is_read_never_run(tmp_path):
    marker = tmp_path / 'ran'
    text = (f'import pathlib\npathlib.Path({str(marker)!r}).touch()\n' +
            dumped(PLAN))
    assert saved_stage_plan(checkpoint(5, cfg=text))[0] == ('train', 4)
    assert not marker.exists()


@pytest.mark.parametrize('plan', [
    [[64, 64, 1, 1]],
    [['train', 0]],
    [['train', '4']],
    [['warmup', 4]],
    'train 4',
    [],
])
def test_a_damaged_saved_plan_is_refused_naming_the_key(plan):
    with pytest.raises(
            ValueError,
            match=r"ckpt\.pth: its meta\['sign_stage_plan'\] is damaged"):
        saved_stage_plan(checkpoint(5, plan), 'ckpt.pth')
    bad = dumped([dict(name='train', iters=-1)])
    with pytest.raises(ValueError, match=r"meta\['cfg'\] \(train_cfg"):
        saved_stage_plan(checkpoint(5, cfg=bad), 'ckpt.pth')


def test_a_resumed_run_keeps_the_checkpoints_stage():
    plan = StagePlan(PLAN)
    written = [['train', 4], ['transfer', 4], ['self_train', 2]]
    # its own stage lengthened, later stages changed: fine
    check_plan_keeps_the_stage(plan, checkpoint(6, written))
    longer = StagePlan([dict(PLAN[0]), dict(PLAN[1], iters=6)])
    check_plan_keeps_the_stage(longer, checkpoint(6, written))
    # iteration 6 of the checkpoint was in transfer; a train stage of 8
    # puts it in train: refused, from the meta and from the config alike
    moved = StagePlan([dict(PLAN[0], iters=8), *PLAN[1:]])
    for ckpt in (checkpoint(6, written), checkpoint(6, cfg=dumped(PLAN))):
        with pytest.raises(
                ValueError,
                match=r"at iteration 6, in stage 1 \('transfer'\)"
                r'.*this plan \(train 8 → transfer 4 → '
                r"self_train 2\) puts that iteration in 'train'"):
            check_plan_keeps_the_stage(moved, ckpt)
    # at iteration 0, or without any saved plan: nothing to compare
    check_plan_keeps_the_stage(moved, checkpoint(0, written))
    check_plan_keeps_the_stage(moved, checkpoint(6))


def test_a_resume_past_the_plans_end_is_refused():
    plan = StagePlan(PLAN)
    check_plan_reaches(plan, checkpoint(9))
    with pytest.raises(
            ValueError,
            match=r'iteration 10, but the stage plan ends at '
            r'iteration 10 .*train_cfg\.stages\.2\.iters=N'):
        check_plan_reaches(plan, checkpoint(10))
    check_plan_reaches(plan, dict(meta='damaged'))  # no iteration: no check


def test_the_checkpoints_precision():
    assert checkpoint_precision(dict(optimizer={'a': {'state': {}}})) is None
    assert checkpoint_precision(
        dict(optimizer={'a': {
            'loss_scaler': {
                'scale': 2.0
            }
        }})) == 'float16'
    amp = ("optim_wrapper = dict(type='MixedPrecisionOptimWrapper', "
           "dtype='bfloat16')")
    assert checkpoint_precision(dict(meta=dict(cfg=amp))) == 'bfloat16'
    # a dtype without a mixed-precision wrapper, or two dtypes: unknown
    assert checkpoint_precision(
        dict(meta=dict(cfg="x = dict(dtype='float16')"))) is None
    both = amp + "\ny = dict(type='AmpOptimWrapper', dtype='float16')"
    assert checkpoint_precision(dict(meta=dict(cfg=both))) is None
