"""The one home of the stage plan and of the class split: what every
other place reads."""
from types import SimpleNamespace

import pytest
import torch
from mmengine.config import Config

from e2e_utils import REPO
from mmseg_sign.structures import (ClassSplit, StagePlan, gan_parts_used,
                                   required_optim_wrappers,
                                   stage_optim_wrappers, stage_options)


@pytest.mark.parametrize('stage, roles', [
    (dict(name='train'), dict(segmentor='segmentor', generator='generator',
                              discriminator='discriminator')),
    (dict(name='transfer'), dict(classifier='transfer',
                                 generator='transfer_generator')),
    (dict(name='transfer', mode='classifier'),
     dict(classifier='transfer')),
    (dict(name='self_train'), dict(
        segmentor='self_train', generator='self_train_generator',
        discriminator='self_train_discriminator')),
    (dict(name='self_train', update='classifier'),
     dict(segmentor='self_train')),
])
def test_each_stage_names_its_wrappers_by_role(stage, roles):
    filled = stage_options(0, dict(stage, iters=1))
    assert stage_optim_wrappers(filled) == roles
    assert required_optim_wrappers(filled) == list(roles.values())


def test_gan_parts_a_stage_runs():
    def parts(**stage):
        return gan_parts_used(stage_options(0, dict(stage, iters=1)))

    assert parts(name='train') == {'generator', 'discriminator'}
    assert parts(name='transfer') == {'generator', 'discriminator'}
    assert parts(name='transfer', mode='classifier') == {'generator'}
    assert parts(name='self_train', update='classifier') == set()
    assert parts(name='self_train', update='classifier',
                 synth_weight=0.5) == {'generator'}


def test_plan_from_a_config_is_its_loops_plan():
    cfg = Config.fromfile(f'{REPO}/configs/sign/sign_toy.py')
    plan = StagePlan.from_config(cfg)
    assert plan.describe() == 'train 600 + transfer 400 + self_train 400'
    assert [plan.start(i) for i in range(3)] == [0, 600, 1000]
    assert [plan.index_at(i) for i in (0, 599, 600, 999, 1000, 5000)] == \
        [0, 0, 1, 1, 2, 2]
    assert plan[2]['candidates'] == 'predicted_unseen'  # the toy's own
    assert plan[1]['real_weight'] == 0.75  # a default, filled in
    assert StagePlan.from_config(Config(dict(custom_hooks=[]))) is None
    spnet = Config.fromfile(f'{REPO}/configs/baselines/spnet_toy.py')
    assert StagePlan.from_config(spnet) is None  # IterBasedTrainLoop
    with pytest.raises(ValueError, match='train_cfg has no stages'):
        StagePlan.from_config(Config(dict(
            train_cfg=dict(type='StagePlanTrainLoop'))))


def test_a_plan_in_custom_hooks_says_where_it_moved():
    """A config written before issue 40 (the plan in a SIGNStageHook):
    the error shows the same plan as train_cfg, from the config and from
    the hook's registry name (mmseg's own tools build the hooks)."""
    from mmseg.registry import HOOKS
    import mmseg_sign  # noqa: F401 (registers the hook's old name)
    stages = [dict(name='train', iters=3),
              dict(name='transfer', iters=2, block_iters=1)]
    old = Config(dict(custom_hooks=[dict(type='TorchRNGStateHook'),
                                    dict(type='SIGNStageHook',
                                         stages=stages)]))
    want = (r"(?s)custom_hooks\[1\]: SIGNStageHook is gone.*train_cfg = dict\("
            r"\n        type='StagePlanTrainLoop',\n        stages=\[\n"
            r"        dict\(name='train', iters=3\),\n        dict\("
            r"name='transfer', iters=2, block_iters=1\)\n        \]\)")
    with pytest.raises(ValueError, match=want):
        StagePlan.from_config(old)
    with pytest.raises(ValueError, match='SIGNStageHook is gone'):
        HOOKS.build(dict(type='SIGNStageHook', stages=stages))


def test_class_split_resolves_and_reads_checkpoints():
    classes = ('a', 'b', 'c', 'd')
    split = ClassSplit.resolve(classes, unseen=[3, 'b'])
    assert split.unseen == ('b', 'd') and split.seen == ('a', 'c')
    assert split.unseen_ids == [1, 3] and split.same_as(['d', 'b'])
    mask = torch.tensor([False, True, False, True])
    ckpt = dict(state_dict={'module.decode_head.unseen_mask': mask},
                meta=dict(dataset_meta=dict(classes=classes)))
    assert ClassSplit.from_checkpoint(ckpt) == split
    assert ClassSplit.from_checkpoint(dict(state_dict={})) is None
    with pytest.raises(ValueError, match='both seen and unseen'):
        ClassSplit.resolve(classes, seen=['a', 'b'], unseen=['b'])


def test_stage_plan_loop_asks_for_its_companion_hooks():
    """A config written from scratch with the loop alone: the run stops
    before training and says which hooks to add."""
    from mmseg_sign.engine.runner import StagePlanTrainLoop
    runner = SimpleNamespace(hooks=[])
    with pytest.raises(ValueError, match=r"sign_split=dict\(type="
                       r"'ClassSplitHook'\).*sign_teacher=dict\(type="
                       r"'SelfTrainingTeacherHook'\)"):
        StagePlanTrainLoop._check_companion_hooks(runner)
    from mmseg_sign.engine.hooks import (ClassSplitHook, ResumeCheckHook,
                                         SelfTrainingTeacherHook)
    runner.hooks += [ClassSplitHook(), ResumeCheckHook(),
                     SelfTrainingTeacherHook()]
    StagePlanTrainLoop._check_companion_hooks(runner)  # complete
