"""``--amp`` config conversion (:mod:`mmseg_sign.engine.amp`): every
optimizer wrapper of a config to mixed precision, the config's own dtype
kept."""
import os.path as osp

import pytest
from mmengine.config import Config

from mmseg_sign.engine import convert_to_amp

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_amp_converts_every_wrapper_of_a_dict():
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    assert convert_to_amp(cfg) is True
    for name in ('segmentor', 'generator', 'discriminator', 'transfer'):
        assert cfg.optim_wrapper[name]['type'] == \
            'MixedPrecisionOptimWrapper'
        assert cfg.optim_wrapper[name]['loss_scale'] == 'dynamic'
    assert (
        cfg.optim_wrapper.constructor == 'ModuleGroupOptimWrapperConstructor')
    assert convert_to_amp(cfg) is False  # already AMP


def test_amp_keeps_the_configs_own_dtype():
    """`--amp` on a config whose wrapper says dtype='float16'
    keeps float16 (before: replaced by the device's default, bfloat16 on a
    CPU); an --amp-dtype against it is an error naming both."""
    from mmseg_sign.engine import enable_amp
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.optim_wrapper.generator.update(
        type='MixedPrecisionOptimWrapper', dtype='float16')
    enable_amp(cfg, None, device='cpu')
    assert cfg.optim_wrapper.generator.dtype == 'float16'
    assert cfg.optim_wrapper.segmentor.dtype == 'bfloat16'  # CPU default
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.optim_wrapper.generator.update(
        type='MixedPrecisionOptimWrapper', dtype='float16')
    with pytest.raises(
            ValueError,
            match=r"--amp-dtype bfloat16, but the "
            r"config sets optim_wrapper\.generator\.dtype="
            r"'float16'"):
        enable_amp(cfg, 'bfloat16', device='cpu')


def test_amp_single_wrapper_and_errors():
    cfg = Config(
        dict(
            optim_wrapper=dict(
                type='OptimWrapper', optimizer=dict(type='SGD', lr=0.1))))
    assert convert_to_amp(cfg) and \
        cfg.optim_wrapper.type == 'MixedPrecisionOptimWrapper'
    bad = Config(
        dict(
            optim_wrapper=dict(
                type='ApexOptimWrapper', optimizer=dict(type='SGD', lr=0.1))))
    with pytest.raises(ValueError, match='ApexOptimWrapper'):
        convert_to_amp(bad)
