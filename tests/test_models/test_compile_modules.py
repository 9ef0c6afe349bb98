"""``model.compile_cfg``: torch.compile of chosen
sub-modules, off by default. Checked on the CPU against the eager model
with the parity harness (every loss and every gradient of each step of the
shipped toy plan, the same pinned draws) and through tools/train.py."""
import copy

import pytest
import torch
from e2e_utils import REPO, run_tool
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmseg.registry import MODELS

from mmseg_sign.analysis.parity import (compare, fixed_batch, fixed_weights,
                                        plan_steps, run_setting)
from mmseg_sign.models.segmentors.compile_modules import compile_modules

TOY = f'{REPO}/configs/sign/sign_toy.py'
MODULES = [
    'decode_head.generator', 'decode_head.discriminator', 'neck.encoder'
]


@pytest.fixture(scope='module')
def toy_cfg(toy_root):
    cfg = Config.fromfile(TOY)
    cfg.merge_from_dict({
        'model.decode_head.class_embeddings':
        f'{toy_root}/class_embeddings.npz',
        # no draw inside a compiled module: the compiled graph would draw
        # from its own generator (see compile_modules.py)
        'model.decode_head.generator_dropout': 0.0,
        **{
            f'{k}.dataset.data_root': str(toy_root)
            for k in ('train_dataloader', 'val_dataloader', 'test_dataloader')
        }
    })
    init_default_scope('mmseg')
    return cfg


@pytest.mark.slow
def test_compiled_modules_compute_what_eager_ones_do(toy_cfg):
    steps = plan_steps(toy_cfg.train_cfg.stages)
    batch = fixed_batch(toy_cfg, 4)
    weights = fixed_weights(toy_cfg, batch['metainfo'])
    eager = run_setting(toy_cfg, weights, batch, 'cpu:float32', steps)
    compiled_cfg = copy.deepcopy(toy_cfg)
    # aot_eager: dynamo's graphs and AOT autograd's joint forward-backward
    # graph, run by eager kernels (inductor's C++ code generation needs a
    # compiler and minutes; its kernels are the GPU's business)
    compiled_cfg.model.compile_cfg = dict(modules=MODULES, backend='aot_eager')
    from torch._dynamo.utils import counters
    counters.clear()
    compiled = run_setting(compiled_cfg, weights, batch, 'cpu:float32', steps)
    # the modules did run as compiled graphs (dynamo captured frames)
    assert counters['frames']['ok'] >= len(MODULES), dict(counters['frames'])
    assert set(compiled) == set(eager)
    rows = compare(compiled, eager)  # one row per loss and module
    # every step's losses and gradients (G, D, the SIM's encoder and
    # everything upstream of them) agree to float32 rounding
    assert max(d for _, d, _, _ in rows) <= 1e-5, rows[:3]
    for term in ('train/loss_mmd', 'train/loss_adv_g', 'train/loss_adv_d',
                 'transfer[synthetic]/loss_ce_synth', 'self_train/loss_ce'):
        assert term in compiled, term


def test_compile_keeps_the_state_dict_and_names_bad_options(toy_cfg):
    plain = MODELS.build(copy.deepcopy(toy_cfg.model))
    assert plain.compiled_modules == []  # off by default
    cfg = copy.deepcopy(toy_cfg.model)
    cfg.compile_cfg = dict(backend='aot_eager')  # the default modules
    model = MODELS.build(cfg)
    assert model.compiled_modules == [
        'decode_head.generator', 'decode_head.discriminator'
    ]
    assert list(model.state_dict()) == list(plain.state_dict())
    with pytest.raises(ValueError, match="no sub-module 'decode_head.gen'"):
        compile_modules(plain, dict(modules=['decode_head.gen']))
    with pytest.raises(ValueError, match=r"\['modes'\] are not torch.compile"):
        compile_modules(plain, dict(modes='max-autotune'))
    with pytest.raises(ValueError, match='must be a dict'):
        compile_modules(plain, True)
    # nothing was compiled by the refused calls
    assert not any(
        getattr(m, '_compiled_call_impl', None) is not None
        for m in plain.modules())


@pytest.mark.slow
def test_compiled_run_through_train_py(toy_root, tmp_path):
    """All three stages (the teacher a copy of a compiled model) and a
    checkpoint that an eager model loads strictly."""
    out = run_tool([
        'train.py', TOY, '--work-dir',
        str(tmp_path / 'wd'), '--cfg-options',
        f'model.decode_head.class_embeddings={toy_root}/class_embeddings.npz',
        *(f'{k}.dataset.data_root={toy_root}'
          for k in ('train_dataloader', 'val_dataloader', 'test_dataloader')),
        'train_cfg.stages.0.iters=2', 'train_cfg.stages.1.iters=2',
        'train_cfg.stages.1.block_iters=1', 'train_cfg.stages.2.iters=2',
        'model.compile_cfg.backend='
        'aot_eager'
    ],
                   cwd=REPO)
    assert "SIGN stage 'self_train' (3/3)" in out
    state = torch.load(
        tmp_path / 'wd' / 'iter_6.pth', map_location='cpu',
        weights_only=False)['state_dict']
    cfg = Config.fromfile(TOY).model
    cfg.decode_head.class_embeddings = f'{toy_root}/class_embeddings.npz'
    MODELS.build(cfg).load_state_dict(state, strict=True)


def test_one_module_named_as_a_string(toy_cfg):
    """``compile_cfg.modules='decode_head.generator'`` (as
    ``--cfg-options`` gives one name) was read as its characters ('d', 'e',
    ...) and refused as "no sub-module 'd'"; it is that one module."""
    cfg = copy.deepcopy(toy_cfg.model)
    cfg.compile_cfg = dict(
        modules='decode_head.generator', backend='aot_eager')
    model = MODELS.build(cfg)
    assert model.compiled_modules == ['decode_head.generator']
