"""The stage plan (:mod:`mmseg_sign.structures.stage_plan`): the one home
of the stages, their options and defaults, each stage's optimizer wrappers
and G / D parts; a config's plan is its training loop's
(``train_cfg.stages``)."""
import pytest
from e2e_utils import REPO
from mmengine.config import Config

from mmseg_sign.structures import (StagePlan, gan_parts_used,
                                   required_optim_wrappers,
                                   stage_optim_wrappers, stage_options)


def test_stage_derivation_from_iteration():
    plan = StagePlan([
        dict(name='train', iters=3),
        dict(name='transfer', iters=2, block_iters=1),
        dict(name='self_train', iters=4, mode='AST')
    ])
    names = [plan[plan.index_at(i)]['name'] for i in range(10)]
    assert names == ['train'] * 3 + ['transfer'] * 2 + ['self_train'] * 5
    assert [plan.start(i) for i in range(3)] == [0, 3, 5]
    assert plan.total_iters == 9
    assert plan.describe() == 'train 3 + transfer 2 + self_train 4'


@pytest.mark.parametrize(
    'stages, message',
    [
        ([], 'at least one stage'),
        ([dict(name='pretrain', iters=3)], 'name must be one of'),
        ([dict(name='train', iters=0)], 'positive integer'),
        ([dict(name='train', iters=3, mode='x')
          ], r"stages\[0\] \(train\): unknown keys \['mode'\]"),
        ([
            dict(name='train', iters=3),
            dict(name='transfer', iters=2, mode='C-only')
        ], r"stages\[1\] \(transfer\): mode must be one of"),
        ([
            dict(name='train', iters=3),
            dict(name='transfer', iters=2, block_size=10)
        ], r"unknown keys \['block_size'\]; options: \['block_iters'"),
        ([dict(name='self_train', iters=3, temperature=0)], 'temperature'),
        ([dict(name='transfer', iters=4, block_iters=2, latent='noise')
          ], r"stages\[0\] \(transfer\): latent must be one of \('prior', "
         r"'posterior'\), got 'noise'"),
        # a transfer that never reaches its second block (the
        # default block_iters=100 with a 20-iteration transfer), a plan out of
        # order
        ([dict(name='train', iters=3),
          dict(name='transfer', iters=20)],
         r'stages\[1\] \(transfer\): 20 iterations in alternating blocks of '
         r'block_iters=100 never reach the second block.*block_iters=10'),
        ([
            dict(name='train', iters=3),
            dict(name='self_train', iters=2),
            dict(name='transfer', iters=4, block_iters=2)
        ], r'stages\[2\] \(transfer\) comes after stages\[1\] \(self_train\)'),
        ([dict(name='self_train', iters=3, mode='ST_topk', top_k=0)], 'top_k'),
        # a transfer stage whose classifier learns from nothing
        ([
            dict(
                name='transfer',
                iters=4,
                block_iters=2,
                real_weight=0,
                fake_weight=0,
                synth_weight=0)
        ], r'stages\[0\] \(transfer\): real_weight, fake_weight, synth_weight '
         r'are all 0.*train_cfg\.stages\.0\.synth_weight=0\.125'),
        ([
            dict(
                name='transfer',
                iters=4,
                mode='classifier',
                real_weight=0,
                synth_weight=0)
        ], r'real_weight, synth_weight are all 0'),
        # self-training straight after training (C1), a stage twice
        # (C2, C3), options the stage's mode does not read (C6)
        ([dict(name='train', iters=3),
          dict(name='self_train', iters=2)
          ], r'stages\[1\] \(self_train\) follows the train stage without a '
         r'transfer stage: its teacher.s classifier has never learnt the '
         r'unseen'),
        ([
            dict(name='train', iters=3),
            dict(name='train', iters=5),
            dict(name='transfer', iters=4, block_iters=2)
        ],
         r"stages\[0\] and stages\[1\] are both 'train'.*Merge them into one "
         r'stage of iters=3 \+ 5'),
        ([
            dict(name='transfer', iters=4, block_iters=2),
            dict(name='self_train', iters=2),
            dict(name='self_train', iters=2)
        ], r"stages\[1\] and stages\[2\] are both 'self_train'.*one teacher"),
        ([
            dict(
                name='self_train',
                iters=3,
                mode='ST_topk',
                temperature=0.01,
                top_p=1)
        ], r"stages\[0\] \(self_train\): mode='ST_topk' does not use "
         r"temperature, top_p \(it reads top_k\).*temperature: mode='AST'; "
         r"top_p: mode='ST'"),
        ([dict(name='self_train', iters=3, mode='AST', top_k=2)],
         r"mode='AST' does not use top_k \(it reads candidates, temperature\)"
         ),
        ([dict(name='transfer', iters=4, mode='classifier', block_iters=2)],
         r"mode='classifier' does not use block_iters \(it reads none of the "
         r"mode options\).*Remove it \(on the command line: "
         r"train_cfg\.stages\.0\.block_iters=None\).*block_iters: "
         r"mode='alternate'"),
        # a plan that is not a list of stage dicts
        (['train', 'transfer'], r"train_cfg\.stages is a list with one dict "
         r"per stage.*stages\[0\] is 'train', not a dict \(dict\(name="
         r"'train', iters=N\)\)"),
        (dict(name='train', iters=2), r"got a dict with keys \['iters', "
         r"'name'\]\. To change one stage from the command line.*"
         r'train_cfg\.stages\.0\.iters=8'),
        ('train', r"list with one dict per stage.*got 'train'\."),
        ([dict(name='train', iters=2), 3], r'stages\[1\] is 3, not a dict\.'),
    ])
def test_stage_plan_errors(stages, message):
    with pytest.raises(ValueError, match=message):
        StagePlan(stages)


def test_mode_options_given_for_their_mode_are_fine():
    """Each mode's own options, and the options every mode of the stage
    reads (weights, update, max_pseudo_ratio), pass and are kept as given;
    a plan that starts with self-training (load_from a transferred
    checkpoint) passes."""
    st = dict(
        name='self_train',
        iters=2,
        mode='ST',
        top_p=50,
        update='train',
        synth_weight=0.1,
        max_pseudo_ratio=2.0)
    plan = StagePlan([st])
    assert len(plan) == 1 and plan.total_iters == 2
    assert {k: plan[0][k] for k in st} == st
    transfer = dict(
        name='transfer',
        iters=2,
        mode='classifier',
        real_weight=1.0,
        synth_weight=1.0,
        latent='posterior')
    ast = dict(
        name='self_train',
        iters=2,
        mode='AST',
        temperature=0.5,
        candidates='predicted_unseen')
    plan = StagePlan([dict(name='train', iters=2), transfer, ast])
    assert plan.describe() == 'train 2 + transfer 2 + self_train 2'
    assert {k: plan[1][k] for k in transfer} == transfer
    assert {k: plan[2][k] for k in ast} == ast


def test_none_unsets_a_mode_option():
    """The command line cannot remove a key: a mode option set to None is
    unset (switching a stage's mode with --cfg-options), the default
    filled in where the mode reads it; None elsewhere keeps its meaning."""
    plan = StagePlan([
        dict(
            name='transfer',
            iters=4,
            block_iters=None,
            mode='classifier',
            fake_weight=None),
        dict(
            name='self_train',
            iters=2,
            mode='ST',
            temperature=None,
            candidates=None,
            max_pseudo_ratio=None)
    ])
    assert plan[0]['mode'] == 'classifier'
    assert plan[0]['block_iters'] == 100 and plan[0]['fake_weight'] == 0.25
    assert plan[1]['temperature'] == 2.0 and plan[1]['top_p'] == 75.0
    assert plan[1]['max_pseudo_ratio'] is None
    # where the mode reads it, None is its default
    alt = StagePlan([dict(name='transfer', iters=200, block_iters=None)])
    assert alt[0]['block_iters'] == 100


def test_stage_plan_defaults_are_the_authors_recipe():
    plan = StagePlan([
        dict(name='train', iters=3),
        dict(name='transfer', iters=200),
        dict(name='self_train', iters=2)
    ])
    assert plan[1] == dict(
        name='transfer',
        iters=200,
        mode='alternate',
        block_iters=100,
        real_weight=0.75,
        fake_weight=0.25,
        synth_weight=0.125,
        latent='prior')
    assert plan[2]['mode'] == 'AST'
    assert plan[2]['temperature'] == 2.0


@pytest.mark.parametrize('stage, roles', [
    (dict(name='train'),
     dict(
         segmentor='segmentor',
         generator='generator',
         discriminator='discriminator')),
    (dict(name='transfer'),
     dict(classifier='transfer', generator='transfer_generator')),
    (dict(name='transfer', mode='classifier'), dict(classifier='transfer')),
    (dict(name='self_train'),
     dict(
         segmentor='self_train',
         generator='self_train_generator',
         discriminator='self_train_discriminator')),
    (dict(name='self_train',
          update='classifier'), dict(segmentor='self_train')),
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
    assert parts(
        name='self_train', update='classifier',
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
        StagePlan.from_config(
            Config(dict(train_cfg=dict(type='StagePlanTrainLoop'))))
