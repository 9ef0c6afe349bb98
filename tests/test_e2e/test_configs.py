"""Every shipped config parses; SIGN models build and run a step of each
stage (the toy ones on real toy embeddings, the big ones on a random table
of the right classes)."""
import ast
import glob
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from model_utils import run_every_stage

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = sorted(
    glob.glob(osp.join(REPO, 'configs', '**', '*.py'), recursive=True))
SIGN_CONFIGS = [c for c in CONFIGS if '/sign/' in c]


def test_configs_found():
    assert len(SIGN_CONFIGS) >= 12


@pytest.mark.parametrize('path', CONFIGS, ids=lambda p: osp.relpath(p, REPO))
def test_config_parses(path):
    cfg = Config.fromfile(path)
    if '_base_' in path:
        return
    assert 'model' in cfg and 'train_dataloader' in cfg
    if '/sign/' in path:
        stages = cfg.train_cfg['stages']
        # the run's length is the plan's (StagePlanTrainLoop), set once
        assert stages and cfg.train_cfg.type == 'StagePlanTrainLoop'
        assert 'max_iters' not in cfg.train_cfg
        assert set(cfg.optim_wrapper) >= {
            'constructor', 'segmentor', 'generator', 'discriminator',
            'transfer'
        }


@pytest.mark.parametrize('name', ['sign_toy.py', 'sign_mit-b0_toy.py'])
def test_toy_configs_train_every_stage(name, toy_root):
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'sign', name))
    run_every_stage(cfg, osp.join(toy_root, 'class_embeddings.npz'))


def paper_config(dataset, variant, tmp_path):
    """A paper config with a random embedding table of its classes."""
    from mmseg_sign.datasets import class_names
    from mmseg_sign.embeddings import save_class_embeddings
    cfg = Config.fromfile(
        osp.join(REPO, 'configs', 'sign', f'sign_{dataset}{variant}.py'))
    names = getattr(
        class_names,
        dict(
            voc='VOC20_CLASSES',
            context='CONTEXT33_CLASSES',
            cocostuff='COCOSTUFF171_CLASSES')[dataset])
    vectors = np.random.default_rng(0).normal(size=(len(names), 600))
    path = str(tmp_path / 'table.npz')
    save_class_embeddings(path, names, vectors.astype(np.float32))
    cfg.model.decode_head.class_embeddings = path
    cfg.model.pretrained = None
    return cfg, len(names)


@pytest.mark.slow
@pytest.mark.parametrize('dataset', ['voc', 'context', 'cocostuff'])
def test_paper_config_steps_every_stage(dataset, tmp_path):
    """The paper-size model (R101, 600-d) with the authors' recipe (frozen
    backbone BN, multi-scale CE, shared trunk, alternating transfer, AST)
    steps every stage on a small input."""
    cfg, num_classes = paper_config(dataset, '_ast', tmp_path)
    before = {
        k: v.clone()
        for k, v in MODELS.build(cfg.model).backbone.state_dict().items()
        if 'running' in k
    }
    model = run_every_stage(
        cfg,
        cfg.model.decode_head.class_embeddings,
        size=40,
        num_classes=num_classes)
    assert model.backbone.norm_eval
    # frozen BN: statistics unchanged and no affine parameter trains
    for k, v in model.backbone.state_dict().items():
        if 'running' in k:
            torch.testing.assert_close(v, before[k])
    norms = [
        m for m in model.backbone.modules()
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
    ]
    assert norms and not any(p.requires_grad for m in norms
                             for p in m.parameters())


@pytest.mark.parametrize('dataset, rate, unseen_share, synth_weight',
                         [('voc', 9, 0.77, 0.125),
                          ('context', 14, 0.67, 0.125),
                          ('cocostuff', 59, 0.85, 1.0)])
def test_paper_configs_hold_the_authors_recipe(dataset, rate, unseen_share,
                                               synth_weight, tmp_path):
    from mmseg_sign.structures.stage_plan import stage_options
    cfg, num_classes = paper_config(dataset, '_ast', tmp_path)
    head = cfg.model.decode_head
    assert head.gen_unseen_rate == rate
    unseen = {'voc': 5, 'context': 4, 'cocostuff': 15}[dataset]
    share = unseen * (1 + rate) / (num_classes - unseen + unseen * (1 + rate))
    assert share == pytest.approx(unseen_share, abs=0.005)
    stages = [
        stage_options(i, s) for i, s in enumerate(cfg.train_cfg['stages'])
    ]
    assert [s['name'] for s in stages] == ['train', 'transfer', 'self_train']
    assert stages[1]['mode'] == 'alternate'
    assert stages[1]['synth_weight'] == synth_weight
    # self-training as released: the train stage's update, no synthetic CE
    assert stages[2]['update'] == 'train' and stages[2]['synth_weight'] == 0
    assert head.mmd_kernel_variances == (2, 5, 10, 20, 40, 60)
    assert head.mmd_estimator == 'released'
    assert head.adv_d_reduction == 'sum'
    assert cfg.model.neck.released_gates
    assert cfg.model.train_cfg.ce_scales == (1.0, 0.5, 0.75)
    assert head.loss_decode.loss_weight == 0.5
    assert cfg.model.backbone.norm_eval
    # the learning-rate multipliers, through mmengine's paramwise options
    model = MODELS.build(cfg.model)
    optim_cfg = dict(cfg.optim_wrapper)
    ow = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type=optim_cfg.pop('constructor'), optim_wrapper_cfg=optim_cfg))(
            model)
    names = {id(p): n for n, p in model.named_parameters()}
    seen = {}
    for group in ow['segmentor'].optimizer.param_groups:
        for p in group['params']:
            seen[names[id(p)]] = (group['lr'] / 2.5e-4,
                                  group['weight_decay'] / 5e-4)
    for name, (lr_mult, decay_mult) in seen.items():
        if name.startswith('neck.input_proj') and name.endswith('bias'):
            assert (lr_mult, decay_mult) == pytest.approx((20, 0)), name
        elif name.startswith('neck.input_proj'):
            assert (lr_mult, decay_mult) == pytest.approx((10, 1)), name
        elif name.startswith('neck.'):
            assert (lr_mult, decay_mult) == pytest.approx((5, 1)), name
        else:
            assert name.startswith('backbone.') and lr_mult == 1, name
    # self-training optimizers (CaGNet configs_st_voc.yaml): E, SIM SGD 5e-5
    # with the same multipliers; D (+ C) Adam 1e-4; G Adam 5e-5; every Adam
    # with torch's default betas, as the released trainer builds them
    st = {
        names[id(p)]: g['lr'] / 5e-5
        for g in ow['self_train'].optimizer.param_groups for p in g['params']
    }
    assert {n: m
            for n, m in st.items()
            } == pytest.approx({n: m
                                for n, (m, _) in seen.items()})
    lr = {
        key: ow[key].optimizer.param_groups[0]['lr']
        for key in ('self_train_generator', 'self_train_discriminator')
    }
    assert lr == {
        'self_train_generator': 5e-5,
        'self_train_discriminator': 1e-4
    }
    heads = {
        names[id(p)].split('.')[1]
        for g in ow['self_train_discriminator'].optimizer.param_groups
        for p in g['params']
    }
    assert heads == {'discriminator', 'trunk', 'conv_seg'}
    for key, wrapper in ow.items():
        if isinstance(wrapper.optimizer, torch.optim.Adam):
            assert wrapper.optimizer.defaults['betas'] == (0.9, 0.999), key


def config_file_assignments(path):
    """The top-level names a config file itself assigns, with the literal
    value of its ``_base_`` (a list of files)."""
    with open(path) as f:
        tree = ast.parse(f.read())
    names, bases = set(), None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            for t in getattr(target, 'elts', [target]):
                names.add(t.id)
                if t.id == '_base_':
                    bases = ast.literal_eval(node.value)
    return names, [bases] if isinstance(bases, str) else bases


SCHEDULE_KEYS = {
    'stages', 'optim_wrapper', 'param_scheduler', 'train_cfg', 'val_cfg',
    'test_cfg', 'custom_hooks', 'default_hooks'
}


@pytest.mark.parametrize('name, model_base, schedule_base', [
    ('sign/sign_voc.py', 'sign_deeplabv2_r101.py', 'sign_40k_6k.py'),
    ('sign/sign_context.py', 'sign_deeplabv2_r101.py',
     'sign_context_40k_10k.py'),
    ('sign/sign_cocostuff.py', 'sign_deeplabv2_r101.py',
     'sign_cocostuff_40k_6k.py'),
    ('sign/sign_ade20k.py', 'sign_deeplabv2_r101.py', 'sign_40k_6k.py'),
    ('sign/sign_camvid.py', 'sign_r18-tiny_toy.py',
     'sign_camvid_2000_400_400.py'),
    ('sign/sign_toy.py', 'sign_r18-tiny_toy.py', 'sign_toy_600_400_400.py'),
    ('sign/sign_lite0_camvid-480x360.py', 'sign_lite0_mlp-fusion.py',
     'sign_lite0_camvid_1200_400_400.py'),
    ('baselines/zs3net_lite0_camvid-480x360.py', 'zs3net_lite0_mlp-fusion.py',
     'sign_lite0_camvid_1200_400_400.py'),
    ('baselines/zs3net_voc.py', 'zs3net_deeplabv2_r101.py', 'sign_40k_6k.py'),
    ('baselines/zs3net_context.py', 'zs3net_deeplabv2_r101.py',
     'sign_context_40k_10k.py'),
    ('baselines/zs3net_cocostuff.py', 'zs3net_deeplabv2_r101.py',
     'sign_cocostuff_40k_6k.py'),
    ('baselines/zs3net_camvid.py', 'zs3net_r18-tiny_toy.py',
     'sign_camvid_2000_400_400.py'),
    ('baselines/zs3net_toy.py', 'zs3net_r18-tiny_toy.py',
     'sign_toy_600_400_400.py'),
    ('baselines/spnet_voc.py', 'spnet_deeplabv2_r101.py', 'spnet_46k.py'),
    ('baselines/spnet_toy.py', 'spnet_r18-tiny_toy.py', 'spnet_46k.py'),
])
def test_run_configs_are_composed_of_bases(name, model_base, schedule_base):
    """A run config is a dataset base + a model base + a schedule base +
    mmseg's runtime, plus what is its own: no layer of the model (the
    model base's backbone and neck, resolved), and the SIGN configs add
    nothing to the schedule (ZS3Net: its transfer stage alone). The head's
    classes come from the dataset base (``head_classes``), one home."""
    path = osp.join(REPO, 'configs', name)
    names, bases = config_file_assignments(path)
    assert f'../_base_/models/{model_base}' in bases
    assert f'../_base_/schedules/{schedule_base}' in bases
    assert 'mmseg::_base_/default_runtime.py' in bases
    assert any('/datasets/' in b for b in bases), bases
    assert len(bases) == 4, bases
    cfg = Config.fromfile(path)  # resolved
    own = Config.fromfile(
        osp.join(REPO, 'configs', '_base_', 'models', model_base)).model
    for part in ('backbone', 'neck'):
        assert cfg.model[part] == own[part], part
    if name.startswith('sign/') and 'ade20k' not in name:
        assert not names & SCHEDULE_KEYS, names & SCHEDULE_KEYS
    if name.startswith('baselines/zs3net'):
        assert names & SCHEDULE_KEYS == {'train_cfg'}
        assert [s.get('mode') for s in cfg.train_cfg.stages] == \
            [None, 'classifier']
    if 'ade20k' not in name:
        text = open(path).read()
        assert 'class_embeddings' not in text and 'num_classes' not in text
        for key, value in cfg.head_classes.items():
            assert cfg.model.decode_head[key] == value, key


def test_toy_and_paper_schedules_have_the_same_structure():
    """The toy plan is the paper's at another scale: the same optimizer
    wrappers over the same modules, scheduler slots, hooks and loops, and
    a model base with the same parts."""
    toy = Config.fromfile(osp.join(REPO, 'configs', 'sign', 'sign_toy.py'))
    for paper_name in ('sign_voc.py', 'sign_context_ast.py'):
        paper = Config.fromfile(osp.join(REPO, 'configs', 'sign', paper_name))
        assert toy.optim_wrapper.keys() == paper.optim_wrapper.keys()
        for name, wrapper in toy.optim_wrapper.items():
            if isinstance(wrapper, dict):  # not constructor / type
                assert wrapper['modules'] == \
                    paper.optim_wrapper[name]['modules'], name
            else:
                assert wrapper == paper.optim_wrapper[name], name
        assert toy.param_scheduler.keys() == paper.param_scheduler.keys()
        assert [h['type'] for h in toy.custom_hooks] == \
            [h['type'] for h in paper.custom_hooks]
        assert {k: h['type'] for k, h in toy.default_hooks.items()} == \
            {k: h['type'] for k, h in paper.default_hooks.items()}
        for loop in ('train_cfg', 'val_cfg', 'test_cfg'):
            assert toy[loop]['type'] == paper[loop]['type'], loop
        for part in ('backbone', 'neck', 'decode_head', 'data_preprocessor'):
            assert toy.model[part]['type'] == paper.model[part]['type']
        assert toy.model.type == paper.model.type
        assert toy.model_wrapper_cfg == paper.model_wrapper_cfg
        # and both plans start with training, then transfer
        assert [s['name'] for s in toy.train_cfg['stages']][:2] == \
            [s['name'] for s in paper.train_cfg['stages']][:2]


def test_stage_lengths_have_one_home():
    """Only a schedule base writes the train stage; every other config
    builds its plan on its parent's (``_base_.stages``), so a stage length
    (e.g. Context's 10k of transfer) is written in one file."""
    restating = []
    for path in CONFIGS:
        if '/_base_/schedules/' in path:
            continue
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.Call) and any(
                    k.arg == 'name' and isinstance(k.value, ast.Constant)
                    and k.value.value == 'train' for k in node.keywords):
                restating.append(osp.relpath(path, REPO))
    assert not restating, restating
    # and the plans still read as before: Context ST = 40k + 10k + 7k
    ctx = Config.fromfile(
        osp.join(REPO, 'configs', 'baselines', 'zs3net_context_st.py'))
    assert [
        (s['name'], s['iters'], s.get('mode')) for s in ctx.train_cfg['stages']
    ] == [('train', 40000, None), ('transfer', 10000, 'classifier'),
          ('self_train', 7000, 'ST')]
