"""Every shipped config parses; SIGN models build and run a step of each
stage (the toy ones on real toy embeddings, the big ones on a random table
of the right classes)."""
import glob
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.config import Config

from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
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
        stages = cfg.custom_hooks[0]['stages']
        assert sum(s['iters'] for s in stages) == cfg.train_cfg.max_iters
        assert set(cfg.optim_wrapper) >= {
            'constructor', 'segmentor', 'generator', 'discriminator',
            'transfer'
        }


def toy_batch(n=2, size=64, num_classes=10):
    from mmengine.structures import PixelData
    from mmseg.structures import SegDataSample
    g = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(n):
        inputs.append(torch.randint(0, 255, (3, size, size), generator=g,
                                    dtype=torch.uint8))
        label = torch.randint(0, num_classes, (1, size, size), generator=g)
        sample = SegDataSample(gt_sem_seg=PixelData(data=label))
        sample.set_metainfo(dict(img_shape=(size, size),
                                 ori_shape=(size, size)))
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


def run_both_stages(cfg, emb_path, size=64, num_classes=10):
    cfg.model.decode_head.class_embeddings = emb_path
    cfg.model.pretrained = None
    cfg.model.data_preprocessor['size'] = (size, size)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.decode_head.set_class_split([num_classes - 1])
    optim_cfg = dict(cfg.optim_wrapper)
    ow = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type=optim_cfg.pop('constructor'), optim_wrapper_cfg=optim_cfg))(
            model)
    model.train()
    for stage in ('train', 'transfer'):
        model.set_stage(stage)
        log_vars = model.train_step(
            toy_batch(size=size, num_classes=num_classes), ow)
        assert all(torch.isfinite(v) for v in log_vars.values()), stage
    model.eval()
    out = model.test_step(toy_batch(1, size, num_classes))
    assert out[0].pred_sem_seg.data.shape == (1, size, size)


@pytest.mark.parametrize('name', ['sign_toy.py', 'sign_mit-b0_toy.py'])
def test_toy_configs_train_both_stages(name, toy_root):
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'sign', name))
    run_both_stages(cfg, osp.join(toy_root, 'class_embeddings.npz'))


def test_voc_config_model_runs(tmp_path):
    """The paper-size VOC model (R101, 600-d) on a small input."""
    from mmseg_sign.datasets.class_names import VOC20_CLASSES
    from mmseg_sign.embeddings import save_class_embeddings
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'sign', 'sign_voc.py'))
    vectors = np.random.default_rng(0).normal(size=(20, 600))
    path = str(tmp_path / 'voc.npz')
    save_class_embeddings(path, VOC20_CLASSES, vectors.astype(np.float32))
    cfg.model.backbone.norm_cfg = dict(type='BN', requires_grad=True)
    run_both_stages(cfg, path, size=48, num_classes=20)
