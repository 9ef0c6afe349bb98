"""MixedPrecisionOptimWrapper on a CPU: autocast, float16 loss scaling (one
scaler per wrapper: a skipped step leaves the other wrappers alone),
checkpoints across precisions, config-only use, and every SIGN stage."""
import copy

import pytest
import torch
import torch.nn as nn
from mmengine.config import Config
from mmengine.optim import OptimWrapper, OptimWrapperDict
from mmseg.registry import OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS
from model_utils import batch, changed, tiny_model

from mmseg_sign.engine import convert_to_amp, enable_amp
from mmseg_sign.engine.optim_wrappers import (MixedPrecisionOptimWrapper,
                                              check_amp_dtype)
from mmseg_sign.engine.optim_wrappers.gradient_sync import update_params

DTYPES = ('bfloat16', 'float16')


def wrapper(module, dtype, lr=0.1, momentum=0.9, **kwargs):
    return OPTIM_WRAPPERS.build(
        dict(
            type='MixedPrecisionOptimWrapper',
            dtype=dtype,
            optimizer=torch.optim.SGD(
                module.parameters(), lr=lr, momentum=momentum),
            **kwargs))


def test_builds_on_a_cpu_with_the_device_defaults():
    ow = wrapper(nn.Linear(3, 2), None)
    assert ow.device_type == 'cpu' and ow.cast_dtype == torch.bfloat16
    assert ow.loss_scaler is None and ow.loss_scale == 1.0
    ow = wrapper(nn.Linear(3, 2), 'float16')
    assert isinstance(ow.loss_scaler, torch.amp.GradScaler)
    assert ow.loss_scale == 2.0**16  # GradScaler's initial scale
    with pytest.raises(ValueError, match='must be one of'):
        wrapper(nn.Linear(3, 2), 'float64')
    with pytest.raises(TypeError, match='loss_scale'):
        wrapper(nn.Linear(3, 2), 'float16', loss_scale='static')


@pytest.mark.parametrize('dtype', DTYPES)
def test_step_is_sgd_on_the_autocast_gradient(dtype):
    """Inside optim_context a Linear runs in the autocast dtype; the step
    applies exactly the gradient of the same forward without a scaler (the
    float16 scale is a power of two: scaling and unscaling are exact)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    x = torch.randn(32, 8)
    ref = copy.deepcopy(net)
    with torch.autocast('cpu', dtype=getattr(torch, dtype)):
        ref(x).float().pow(2).mean().backward()
    ow = wrapper(net, dtype, momentum=0.0)
    with ow.optim_context(net):
        out = net(x)
        assert out.dtype == getattr(torch, dtype)
        loss = out.float().pow(2).mean()
    update_params(ow, loss)
    for p, q in zip(net.parameters(), ref.parameters()):
        assert torch.allclose(
            p.detach(), q.detach() - 0.1 * q.grad, rtol=0, atol=1e-7)


def test_overflow_skips_one_wrapper_and_spares_the_others():
    """float16: an overflowing loss in wrapper `a` skips a's step (weights
    and momentum untouched) and halves a's scale; wrapper `b`, stepped
    after it in the same iteration, updates as usual with its own scale."""
    torch.manual_seed(0)
    a, b = nn.Linear(4, 4), nn.Linear(4, 4)
    wrappers = OptimWrapperDict(
        a=wrapper(a, 'float16'), b=wrapper(b, 'float16'))
    x = torch.randn(8, 4)
    for name, net in (('a', a), ('b', b)):  # a clean step each: momentum
        with wrappers[name].optim_context(net):
            loss = net(x).float().pow(2).mean()
        update_params(wrappers[name], loss)
    a_before = copy.deepcopy(a.state_dict())
    a_mom = [
        wrappers['a'].optimizer.state[p]['momentum_buffer'].clone()
        for p in a.parameters()
    ]
    b_before = copy.deepcopy(b.state_dict())
    with wrappers['a'].optim_context(a):
        loss_a = a(x).float().sum() * 1e38  # scaled by 65536: inf
    update_params(wrappers['a'], loss_a)
    with wrappers['b'].optim_context(b):
        loss_b = b(x).float().pow(2).mean()
    update_params(wrappers['b'], loss_b)
    assert changed(a_before, a.state_dict()) == set()
    for p, m in zip(a.parameters(), a_mom):
        assert torch.equal(wrappers['a'].optimizer.state[p]['momentum_buffer'],
                           m)
    assert wrappers['a'].loss_scale == 2.0**15
    assert changed(b_before, b.state_dict()) == {'weight', 'bias'}
    assert wrappers['b'].loss_scale == 2.0**16
    assert all(
        bool(p.isfinite().all()) for p in (*a.parameters(), *b.parameters()))


def test_checkpoints_across_precisions():
    net = nn.Linear(3, 2)
    fp16 = wrapper(net, 'float16', loss_scale=dict(init_scale=1024.0))
    state = fp16.state_dict()
    assert state['loss_scaler']['scale'] == 1024.0
    again = wrapper(net, 'float16')
    again.load_state_dict(copy.deepcopy(state))
    assert again.loss_scale == 1024.0
    bf16 = wrapper(net, 'bfloat16')
    bf16.load_state_dict(copy.deepcopy(state))  # the scale is dropped
    assert 'loss_scaler' not in bf16.state_dict()
    plain = OptimWrapper(torch.optim.SGD(net.parameters(), lr=0.1))
    fresh = wrapper(net, 'float16')
    fresh.load_state_dict(plain.state_dict())  # fp32 checkpoint
    assert fresh.loss_scale == 2.0**16


def amp_constructor_cfg(dtype):
    """A user's config naming mmengine's AmpOptimWrapper per entry."""
    adam = dict(type='Adam', lr=1e-2)
    c = ['decode_head.conv_seg', 'decode_head.trunk']
    entries = dict(
        segmentor=(dict(type='SGD', lr=0.1,
                        momentum=0.9), ['backbone', 'neck']),
        generator=(adam, ['decode_head.generator']),
        discriminator=(adam, ['decode_head.discriminator', *c]),
        transfer=(adam, ['decode_head.discriminator', *c]),
        transfer_generator=(adam, ['decode_head.generator']),
        self_train=(dict(type='SGD', lr=0.1), ['backbone', 'neck']),
        self_train_generator=(adam, ['decode_head.generator']),
        self_train_discriminator=(adam, ['decode_head.discriminator', *c]))
    return dict(
        type='ModuleGroupOptimWrapperConstructor',
        optim_wrapper_cfg={
            name: dict(
                type='AmpOptimWrapper',
                dtype=dtype,
                optimizer=opt,
                modules=mods)
            for name, (opt, mods) in entries.items()
        })


@pytest.mark.parametrize('dtype', DTYPES)
def test_every_stage_steps_under_autocast(embedding_table, dtype):
    """Config-only use: `type='AmpOptimWrapper'` entries become
    MixedPrecisionOptimWrapper on a CPU; train, transfer (both blocks) and
    self-training step every part of the shared-trunk model with finite
    losses, the KL term included."""
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0], classifier='shared_trunk')
    ows = OPTIM_WRAPPER_CONSTRUCTORS.build(amp_constructor_cfg(dtype))(model)
    for name, ow in ows.items():
        assert type(ow) is MixedPrecisionOptimWrapper, name
        assert ow.cast_dtype == getattr(torch, dtype)
        assert (ow.loss_scaler is None) == (dtype == 'bfloat16')
    model.train()
    plan = [('train', dict()),
            ('transfer', dict(mode='alternate', block_iters=1)),
            ('transfer', dict(mode='alternate', block_iters=1)),
            ('self_train', dict(mode='AST', temperature=0.2))]
    for i, (stage, opts) in enumerate(plan):
        if stage != model.stage or i == 0:
            model.set_stage(stage, **opts)
        else:
            model.stage_iter += 1  # the second transfer block
        before = copy.deepcopy(model.state_dict())
        log_vars = model.train_step(batch(), ows)
        assert all(bool(torch.isfinite(v).all()) for v in log_vars.values())
        moved = {
            k.split('.')[1]
            if k.startswith('decode_head.') else k.split('.')[0]
            for k in changed(before, model.state_dict())
        }
        if stage in ('train', 'self_train'):
            assert float(log_vars['loss_kld']) > 0  # not cancelled to 0
            if dtype == 'bfloat16':  # float16 may skip a first step
                assert {
                    'backbone', 'neck', 'generator', 'discriminator',
                    'conv_seg'
                } <= moved
        elif dtype == 'bfloat16':
            assert 'backbone' not in moved and 'neck' not in moved
            assert 'conv_seg' in moved


def test_shared_classifier_is_unharmed_by_a_skipped_generator_step(
        embedding_table):
    """float16, the train stage: G's loss overflows (its scaler's scale set
    absurdly high), so G's step is skipped and G's scale halved; C's
    gradients from G's backward through D do not reach D's Adam (its step
    starts clean), so the segmentor and D + C update as usual, finite."""
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0], classifier='shared_trunk')
    cfg = amp_constructor_cfg('float16')
    # G's next scaled loss overflows
    cfg['optim_wrapper_cfg']['generator']['loss_scale'] = dict(init_scale=3e38)
    ows = OPTIM_WRAPPER_CONSTRUCTORS.build(cfg)(model)
    model.train()
    model.set_stage('train')
    before = copy.deepcopy(model.state_dict())
    log_vars = model.train_step(batch(), ows)
    after = model.state_dict()
    moved = changed(before, after)
    assert not any(k.startswith('decode_head.generator') for k in moved)
    assert ows['generator'].loss_scale == pytest.approx(1.5e38)
    for group in ('backbone.', 'neck.', 'decode_head.conv_seg',
                  'decode_head.trunk', 'decode_head.discriminator'):
        assert any(k.startswith(group) for k in moved), group
    assert ows['segmentor'].loss_scale == 2.0**16
    assert ows['discriminator'].loss_scale == 2.0**16
    for state in ows['discriminator'].optimizer.state.values():
        assert all(
            bool(torch.isfinite(v).all()) for v in state.values()
            if isinstance(v, torch.Tensor))
    assert all(
        bool(torch.isfinite(v).all()) for v in after.values()
        if v.is_floating_point())
    assert all(bool(torch.isfinite(v).all()) for v in log_vars.values())


def test_convert_and_enable_amp():
    cfg = Config(
        dict(
            optim_wrapper=dict(
                constructor='ModuleGroupOptimWrapperConstructor',
                a=dict(optimizer=dict(type='SGD', lr=0.1), modules=['x']),
                b=dict(
                    type='AmpOptimWrapper',
                    loss_scale=512.0,
                    optimizer=dict(type='SGD', lr=0.1),
                    modules=['y']))))
    assert enable_amp(cfg, None, device='cpu') is True
    assert cfg.optim_wrapper.a.type == 'MixedPrecisionOptimWrapper'
    assert cfg.optim_wrapper.a.dtype == 'bfloat16'  # the CPU default
    assert cfg.optim_wrapper.b.type == 'MixedPrecisionOptimWrapper'
    assert cfg.optim_wrapper.b.loss_scale == 512.0  # the user's own
    assert convert_to_amp(cfg, 'bfloat16') is False
    # a dtype the config names is kept: another one asked for is an error
    # (before, it silently replaced the config's)
    with pytest.raises(
            ValueError, match="config sets optim_wrapper.a.dtype="
            "'bfloat16'"):
        convert_to_amp(cfg, 'float16')
    assert cfg.optim_wrapper.a.dtype == 'bfloat16'
    with pytest.raises(ValueError, match='must be one of'):
        enable_amp(cfg, 'int8', device='cpu')
    with pytest.raises(ValueError, match='runs on cpu or cuda'):
        check_amp_dtype('mps', 'float16')
    assert check_amp_dtype('cuda', None) == 'float16'  # no GPU call


def _two_entries(**run):
    """An ``optim_wrapper`` dict of two entries (``a``: plain, ``b``:
    float16 with its own scale) and the run-level keys ``run``."""
    return dict(
        constructor='ModuleGroupOptimWrapperConstructor',
        **run,
        a=dict(optimizer=dict(type='SGD', lr=0.1), modules=['0']),
        b=dict(
            type='AmpOptimWrapper',
            dtype='float16',
            loss_scale=512.0,
            optimizer=dict(type='SGD', lr=0.1),
            modules=['1']))


def _build(optim_wrapper):
    cfg = copy.deepcopy(optim_wrapper)
    return OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type=cfg.pop('constructor'), optim_wrapper_cfg=cfg))(
            nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2)))


def test_the_dicts_own_type_is_the_runs():
    """The dict's own ``type`` (what mmseg's tools/train.py --amp
    and mmengine on an NPU set) is every entry's wrapper type; an entry's
    own settings are kept."""
    ows = _build(_two_entries(type='OptimWrapper'))
    assert type(ows['a']) is OptimWrapper
    assert isinstance(ows['b'], MixedPrecisionOptimWrapper)
    # what mmseg's --amp writes: type AmpOptimWrapper, loss_scale dynamic
    ows = _build(_two_entries(type='AmpOptimWrapper', loss_scale='dynamic'))
    a, b = ows['a'], ows['b']
    assert isinstance(a, MixedPrecisionOptimWrapper)
    assert a.cast_dtype == torch.bfloat16 and a.loss_scaler is None  # CPU
    assert b.cast_dtype == torch.float16 and b.loss_scale == 512.0  # own
    ows = _build(
        _two_entries(
            type='AmpOptimWrapper', dtype='float16', loss_scale=128.0))
    assert ows['a'].cast_dtype == torch.float16
    assert ows['a'].loss_scale == 128.0 and ows['b'].loss_scale == 512.0
    with pytest.raises(
            ValueError,
            match="optim_wrapper.dtype bfloat16, "
            "but the config sets optim_wrapper.b.dtype="
            "'float16'"):
        _build(_two_entries(type='AmpOptimWrapper', dtype='bfloat16'))
    with pytest.raises(
            ValueError,
            match="optim_wrapper.type='Adafactor': "
            "the type of a dict of optimizer wrappers is "
            "'OptimWrapper'"):
        _build(_two_entries(type='Adafactor'))
    with pytest.raises(
            ValueError,
            match='optim_wrapper.dtype is for mixed '
            "precision: set optim_wrapper.type='AmpOptimWrapper'"):
        _build(_two_entries(dtype='float16'))
    with pytest.raises(
            ValueError,
            match="optim_wrapper.lr = 0.1: every key "
            'of a dict of optimizer wrappers'):
        _build(_two_entries(lr=0.1))
    with pytest.raises(
            ValueError,
            match="optim_wrapper.lr = 0.1: every key "
            'of a dict of optimizer wrappers'):
        _build(_two_entries(type='AmpOptimWrapper', lr=0.1))
    # this project's --amp on such a dict converts the entries, and a
    # --amp-dtype against the dict's own dtype is named as such
    cfg = Config(dict(optim_wrapper=_two_entries(type='OptimWrapper')))
    assert enable_amp(cfg, None, device='cpu') is True
    assert cfg.optim_wrapper.type == 'OptimWrapper'
    assert cfg.optim_wrapper.a.dtype == 'bfloat16'
    cfg = Config(
        dict(
            optim_wrapper=_two_entries(
                type='AmpOptimWrapper', dtype='float16')))
    with pytest.raises(
            ValueError,
            match="--amp-dtype bfloat16, but the "
            "config sets optim_wrapper.dtype="
            "'float16'"):
        enable_amp(cfg, 'bfloat16', device='cpu')


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')
def test_cuda_defaults_to_float16():
    ow = OPTIM_WRAPPERS.build(
        dict(
            type='MixedPrecisionOptimWrapper',
            optimizer=torch.optim.SGD(
                nn.Linear(3, 2).cuda().parameters(), lr=0.1)))
    assert ow.device_type == 'cuda' and ow.cast_dtype == torch.float16
    assert ow.loss_scaler is not None
