"""--amp config conversion, StagePlan stage derivation, checkpoint
loading with torch's weights_only default."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmseg_sign.structures import StagePlan
from mmseg_sign.engine import convert_to_amp

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_amp_converts_every_wrapper_of_a_dict():
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    assert convert_to_amp(cfg) is True
    for name in ('segmentor', 'generator', 'discriminator', 'transfer'):
        assert cfg.optim_wrapper[name]['type'] == \
            'MixedPrecisionOptimWrapper'
        assert cfg.optim_wrapper[name]['loss_scale'] == 'dynamic'
    assert cfg.optim_wrapper.constructor == 'ModuleGroupOptimWrapperConstructor'
    assert convert_to_amp(cfg) is False  # already AMP


def test_amp_keeps_the_configs_own_dtype():
    """Issue 34: `--amp` on a config whose wrapper says dtype='float16'
    keeps float16 (before: replaced by the device's default, bfloat16 on a
    CPU); an --amp-dtype against it is an error naming both."""
    from mmseg_sign.engine import enable_amp
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.optim_wrapper.generator.update(type='MixedPrecisionOptimWrapper',
                                       dtype='float16')
    enable_amp(cfg, None, device='cpu')
    assert cfg.optim_wrapper.generator.dtype == 'float16'
    assert cfg.optim_wrapper.segmentor.dtype == 'bfloat16'  # CPU default
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.optim_wrapper.generator.update(type='MixedPrecisionOptimWrapper',
                                       dtype='float16')
    with pytest.raises(ValueError, match=r"--amp-dtype bfloat16, but the "
                       r"config sets optim_wrapper\.generator\.dtype="
                       r"'float16'"):
        enable_amp(cfg, 'bfloat16', device='cpu')


def test_amp_single_wrapper_and_errors():
    cfg = Config(dict(optim_wrapper=dict(
        type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))))
    assert convert_to_amp(cfg) and \
        cfg.optim_wrapper.type == 'MixedPrecisionOptimWrapper'
    bad = Config(dict(optim_wrapper=dict(
        type='ApexOptimWrapper', optimizer=dict(type='SGD', lr=0.1))))
    with pytest.raises(ValueError, match='ApexOptimWrapper'):
        convert_to_amp(bad)


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


@pytest.mark.parametrize('stages, message', [
    ([], 'at least one stage'),
    ([dict(name='pretrain', iters=3)], 'name must be one of'),
    ([dict(name='train', iters=0)], 'positive integer'),
    ([dict(name='train', iters=3, mode='x')],
     r"stages\[0\] \(train\): unknown keys \['mode'\]"),
    ([dict(name='train', iters=3), dict(name='transfer', iters=2,
                                        mode='C-only')],
     r"stages\[1\] \(transfer\): mode must be one of"),
    ([dict(name='train', iters=3), dict(name='transfer', iters=2,
                                        block_size=10)],
     r"unknown keys \['block_size'\]; options: \['block_iters'"),
    ([dict(name='self_train', iters=3, temperature=0)], 'temperature'),
    # issue 34: a transfer that never reaches its second block (the
    # default block_iters=100 with a 20-iteration transfer), a plan out of
    # order
    ([dict(name='train', iters=3), dict(name='transfer', iters=20)],
     r'stages\[1\] \(transfer\): 20 iterations in alternating blocks of '
     r'block_iters=100 never reach the second block.*block_iters=10'),
    ([dict(name='train', iters=3), dict(name='self_train', iters=2),
      dict(name='transfer', iters=4, block_iters=2)],
     r'stages\[2\] \(transfer\) comes after stages\[1\] \(self_train\)'),
    ([dict(name='self_train', iters=3, mode='ST_topk', top_k=0)], 'top_k'),
])
def test_stage_plan_errors(stages, message):
    with pytest.raises(ValueError, match=message):
        StagePlan(stages)


def test_stage_plan_defaults_are_the_authors_recipe():
    plan = StagePlan([dict(name='train', iters=3),
                      dict(name='transfer', iters=200),
                      dict(name='self_train', iters=2)])
    assert plan[1] == dict(
        name='transfer', iters=200, mode='alternate', block_iters=100,
        real_weight=0.75, fake_weight=0.25, synth_weight=0.125)
    assert plan[2]['mode'] == 'AST'
    assert plan[2]['temperature'] == 2.0


def test_checkpoint_with_message_hub_loads_weights_only(tmp_path):
    """torch >= 2.6 loads with weights_only=True; the mmengine objects in a
    checkpoint must be allowed (and nothing callable like getattr)."""
    from mmengine.logging import MessageHub
    import mmseg_sign  # noqa: F401 (registers the safe globals)
    hub = MessageHub.get_instance('ckpt_test')
    for i in range(3):
        hub.update_scalar('train/loss', 0.5 * i)
    hub.update_info('iter', 3)
    path = tmp_path / 'ckpt.pth'
    torch.save(dict(message_hub=hub.state_dict(),
                    state_dict=dict(w=torch.ones(2))), path)
    loaded = torch.load(path, weights_only=True)
    buf = loaded['message_hub']['log_scalars']['train/loss']
    assert buf.mean() == pytest.approx(0.5)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(
        str(path)) == []
