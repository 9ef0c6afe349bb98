"""The dry run before iteration 1: data and model-shape mistakes fail in
seconds with the fix, and the dry run changes no random or model state."""
import logging
import os.path as osp
import re
import shutil

import numpy as np
import pytest
import torch
from e2e_utils import REPO, run_tool, write_config
from mmengine.config import Config
from mmseg.registry import DATASETS, MODELS
from PIL import Image

from mmseg_sign.engine.hooks.dry_run import (check_raw_label_map,
                                             dry_run_first_sample)


@pytest.fixture()
def toy(tmp_path, toy_root):
    root = tmp_path / 'data' / 'toy'
    shutil.copytree(toy_root, root)
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_toy.py'))
    cfg.train_dataloader.dataset.data_root = str(root)
    cfg.model.decode_head.class_embeddings = str(root / 'class_embeddings.npz')
    return tmp_path, root, cfg


def first_label(dataset):
    return dataset.get_data_info(0)['seg_map_path']


def test_dry_run_passes_and_leaves_no_trace(toy):
    _, _, cfg = toy
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    model = MODELS.build(cfg.model)
    model.train()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    rng = torch.get_rng_state()
    np_rng = np.random.get_state()[1].copy()
    dry_run_first_sample(model, dataset)
    assert model.training
    assert torch.equal(torch.get_rng_state(), rng)
    assert np.array_equal(np.random.get_state()[1], np_rng)
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k  # BN statistics included


def test_label_and_image_sizes_must_match(toy):
    _, _, cfg = toy
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    path = first_label(dataset)
    label = Image.open(path)
    label.resize((label.width // 2, label.height // 2),
                 Image.NEAREST).save(path)
    with pytest.raises(ValueError, match='label map is .* but its image is'):
        dry_run_first_sample(MODELS.build(cfg.model), dataset)


@pytest.mark.parametrize('neck, message', [
    (dict(in_channels=64), r'set neck.in_channels=128'),
    (dict(in_index=5), r'neck.in_index=5, but the backbone gives 1 '
     r'output\(s\) with \[128\] channels'),
])
def test_neck_must_fit_the_backbone(toy, neck, message):
    _, _, cfg = toy
    cfg.model.neck.update(neck)
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    with pytest.raises(ValueError, match=message):
        dry_run_first_sample(MODELS.build(cfg.model), dataset)


def test_multi_level_projection_must_fit_the_backbone(toy):
    """E's projection over several levels (MLPFusion, the ImageNet-feature
    configs): the widths of each level, with the list the fix needs."""
    _, _, cfg = toy
    cfg.model.backbone.out_indices = (2, 3)  # 64 and 128 channels
    cfg.model.neck.update(
        in_index=[0, 1],
        in_channels=[64, 100],
        input_proj=dict(type='MLPFusion'))
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    with pytest.raises(
            ValueError, match=re.escape('set neck.in_channels=[64, 128]')):
        dry_run_first_sample(MODELS.build(cfg.model), dataset)
    cfg.model.neck.in_channels = [64, 128]
    dry_run_first_sample(MODELS.build(cfg.model), dataset)


def test_16_bit_label_maps_would_wrap(tmp_path):
    path = str(tmp_path / 'label.png')
    Image.fromarray(np.array([[1, 300], [2, 255]], np.uint16)).save(path)
    with pytest.raises(ValueError, match='values up to 300.*wrap'):
        check_raw_label_map(dict(seg_map_path=path), num_classes=10)


def test_one_based_labels_need_reduce_zero_label(tmp_path):
    path = str(tmp_path / 'label.png')
    Image.fromarray(np.array([[1, 10], [3, 255]], np.uint8)).save(path)
    with pytest.raises(ValueError, match='set reduce_zero_label=True'):
        check_raw_label_map(dict(seg_map_path=path), num_classes=10)
    check_raw_label_map(
        dict(seg_map_path=path, reduce_zero_label=True), num_classes=10)
    # 10 raw classes, one held out (mmseg's label_map): 0-based values up
    # to 9 are not taken for 1-based labels of 9 classes
    Image.fromarray(np.array([[1, 9], [3, 255]], np.uint8)).save(path)
    label_map = {i: (255 if i == 4 else i - (i > 4)) for i in range(10)}
    check_raw_label_map(
        dict(seg_map_path=path, label_map=label_map), num_classes=9)
    with pytest.raises(ValueError, match='set reduce_zero_label=True'):
        check_raw_label_map(dict(seg_map_path=path), num_classes=9)


def test_label_reading_is_logged(tmp_path):
    """reduce_zero_label=True on 0-based maps has no tell-tale value, so
    the dry run logs how the raw values are read."""
    from mmengine.logging import MMLogger
    path = str(tmp_path / 'label.png')
    Image.fromarray(np.array([[0, 4], [2, 255]], np.uint8)).save(path)
    logger = MMLogger.get_instance('test_label_reading', log_level='INFO')
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger.addHandler(handler)
    try:
        check_raw_label_map(
            dict(seg_map_path=path, reduce_zero_label=True), num_classes=5)
        check_raw_label_map(dict(seg_map_path=path), num_classes=5)
    finally:
        logger.removeHandler(handler)
    assert 'raw label values [0, 2, 4, 255]' in lines[0], lines
    assert '0 -> ignore, v -> v-1' in lines[0], lines
    assert 'v is class v' in lines[1], lines


@pytest.mark.slow
def test_train_tool_fails_before_iteration_1(toy):
    ws, _, _ = toy
    cfg = write_config(ws / 'bad.py', 'configs/sign/sign_toy.py',
                       'model = dict(neck=dict(in_channels=64))')
    with pytest.raises(AssertionError, match='set neck.in_channels=128'):
        run_tool(['train.py', cfg, '--work-dir', str(ws / 'wd')], ws)
    assert not (ws / 'wd' / 'iter_1.pth').exists()
