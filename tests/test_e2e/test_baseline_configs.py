"""Table 1's baselines (SPNet, ZS3Net, CaGNet, + ST) as shipped configs: the
paper-size ones build without data, on SIGN's data and embeddings; the toy
ones run end to end with tools/train.py and tools/test.py."""
import os.path as osp

import numpy as np
import pytest
import torch
from e2e_utils import REPO, last_metrics, run_tool, toy_workspace, write_config
from mmengine.config import Config
from mmseg.registry import MODELS
from model_utils import run_every_stage

DATASETS = ('voc', 'context', 'cocostuff')
METHODS = ('spnet', 'zs3net', 'zs3net_st', 'cagnet', 'cagnet_st')


def baseline(method, dataset):
    """The baseline config of ``method`` on ``dataset`` and SIGN's config of
    the same dataset (and self-training when the baseline has it)."""
    name = method.replace('_st', '')
    st = '_st' if method.endswith('_st') else ''
    path = osp.join(REPO, 'configs', 'baselines', f'{name}_{dataset}{st}.py')
    sign = osp.join(REPO, 'configs', 'sign', f'sign_{dataset}{st}.py')
    return Config.fromfile(path), Config.fromfile(sign)


@pytest.mark.parametrize('dataset', DATASETS)
@pytest.mark.parametrize('method', METHODS)
def test_paper_baselines_build_on_signs_data(method, dataset, tmp_path):
    """Same data, splits, embeddings, input size and (for the methods with
    stages) stage lengths as SIGN; the model builds without any data."""
    from mmseg_sign.datasets import class_names
    from mmseg_sign.embeddings import save_class_embeddings
    cfg, sign = baseline(method, dataset)
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader',
                'val_evaluator', 'test_evaluator'):
        assert cfg[key] == sign[key], key
    head = cfg.model.decode_head
    assert head.class_embeddings == sign.model.decode_head.class_embeddings
    assert head.num_classes == sign.model.decode_head.num_classes
    assert cfg.model.backbone == sign.model.backbone
    assert cfg.model.data_preprocessor == sign.model.data_preprocessor
    if method != 'spnet':
        plan = cfg.train_cfg['stages']
        assert [s['iters'] for s in plan
                ] == [s['iters'] for s in sign.train_cfg['stages']]
        assert cfg.train_cfg.type == 'StagePlanTrainLoop'
        assert 'max_iters' not in cfg.train_cfg
    names = getattr(
        class_names,
        dict(
            voc='VOC20_CLASSES',
            context='CONTEXT33_CLASSES',
            cocostuff='COCOSTUFF171_CLASSES')[dataset])
    table = str(tmp_path / 'table.npz')
    save_class_embeddings(
        table, names,
        np.random.default_rng(0).normal(size=(len(names),
                                              600)).astype(np.float32))
    head.class_embeddings = table
    cfg.model.pretrained = None
    model = MODELS.build(cfg.model)
    kind = {'spnet': 'SPNetHead', 'zs3net': 'SIGNHead', 'cagnet': 'SIGNHead'}
    assert type(model.decode_head).__name__ == kind[method.split('_')[0]]
    if method.startswith('zs3net'):
        assert type(model.neck).__name__ == 'NoisePriorNeck'
        assert model.decode_head.discriminator is None
    if method.startswith('cagnet'):
        assert (model.neck.pe_channels, type(model.neck.encoder).__name__) \
            == (0, 'AttentionEncoder')


@pytest.mark.parametrize('name', ['zs3net_toy_st.py', 'cagnet_toy_st.py'])
def test_toy_baselines_step_every_stage(name, toy_root):
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'baselines', name))
    model = run_every_stage(cfg, osp.join(toy_root, 'class_embeddings.npz'))
    if name.startswith('zs3net'):
        assert model.decode_head.discriminator is None


@pytest.fixture(scope='module')
def workspace(tmp_path_factory, toy_root):
    return toy_workspace(tmp_path_factory, toy_root, 'ws_baselines')


SHORT_PLAN = """
stages = [dict(name='train', iters=3),
          dict(name='transfer', iters=2, {transfer}),
          dict(name='self_train', iters=2, {self_train})]
train_cfg = dict(stages=stages)
param_scheduler = dict(segmentor=[
    dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0, end=3,
         by_epoch=False)])
default_hooks = dict(checkpoint=dict(interval=7), logger=dict(interval=1))
"""
SHORT = {
    'spnet_toy.py':
    """
param_scheduler = [dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0,
                        end=6, by_epoch=False)]
train_cfg = dict(max_iters=6, val_interval=6)
default_hooks = dict(checkpoint=dict(interval=6), logger=dict(interval=1))
""",
    'zs3net_toy_st.py':
    SHORT_PLAN.format(
        transfer="mode='classifier', real_weight=1.0, synth_weight=1.0",
        self_train="mode='ST', top_p=75.0"),
    'cagnet_toy_st.py':
    SHORT_PLAN.format(
        transfer="mode='alternate', block_iters=1",
        self_train="mode='ST_topk', top_k=1"),
}


@pytest.mark.slow
@pytest.mark.parametrize('name', sorted(SHORT))
def test_toy_baseline_trains_and_tests(name, workspace):
    """tools/train.py runs the shipped toy config (shortened) to the end and
    tools/test.py prints the seen / unseen / harmonic table."""
    cfg = write_config(workspace / name, f'configs/baselines/{name}',
                       SHORT[name])
    wd = str(workspace / f'wd_{name[:-3]}')
    out = run_tool(['train.py', cfg, '--work-dir', wd], workspace)
    last = 6 if name == 'spnet_toy.py' else 7
    assert 'hIoU' in out and osp.exists(osp.join(wd, f'iter_{last}.pth'))
    if name != 'spnet_toy.py':
        assert "stage 'self_train' (3/3)" in out
    state = torch.load(
        osp.join(wd, f'iter_{last}.pth'), map_location='cpu')['state_dict']
    assert not [k for k in state if 'discriminator' in k] or \
        name.startswith('cagnet')
    test_wd = str(workspace / f'test_{name[:-3]}')
    out = run_tool([
        'test.py', cfg,
        osp.join(wd, f'iter_{last}.pth'), '--work-dir', test_wd
    ], workspace)
    metrics = last_metrics(test_wd)
    assert {'mIoU_seen', 'mIoU_unseen', 'hIoU'} <= set(metrics)
    assert '| Split  |' in out and 'unseen' in out
