"""init_model_checked: mmseg's init_model, refusing a checkpoint that does
not fit the config's model (mmseg's loads leniently: the weights it lacks
stay random and every number computed afterwards is meaningless)."""
import os.path as osp

import pytest
import torch
from e2e_utils import REPO
from mmengine.config import Config

from mmseg_sign.apis.inference import init_model_checked
from mmseg_sign.engine.hooks import CheckpointMismatchError

CONFIG = osp.join(REPO, 'configs', 'sign', 'sign_toy.py')
CLASSES = tuple(f'c{i}' for i in range(10))


def _config(toy_root):
    cfg = Config.fromfile(CONFIG)
    cfg.model.decode_head.class_embeddings = osp.join(toy_root,
                                                      'class_embeddings.npz')
    return cfg


@pytest.fixture(scope='module')
def saved(tmp_path_factory, toy_root):
    """A checkpoint of the toy SIGN model (random weights, as written by
    mmengine: ``meta`` and ``state_dict``)."""
    from mmseg.apis import init_model
    torch.manual_seed(0)
    model = init_model(_config(toy_root), None, device='cpu')
    state = {k: v.clone() for k, v in model.state_dict().items()}
    path = tmp_path_factory.mktemp('ckpt') / 'model.pth'
    torch.save(
        dict(
            meta=dict(
                dataset_meta=dict(classes=CLASSES), experiment_name='toy_run'),
            state_dict=state), path)
    return str(path), state


def test_loads_every_weight_of_a_fitting_checkpoint(saved, toy_root):
    path, state = saved
    torch.manual_seed(1)  # another initialisation than the saved one
    model = init_model_checked(_config(toy_root), path)
    got = model.state_dict()
    assert set(got) == set(state)
    for key, value in state.items():
        assert torch.equal(got[key], value), key
    assert model.dataset_meta['classes'] == CLASSES
    assert not model.training


def test_refuses_a_checkpoint_of_another_model(saved, toy_root, tmp_path):
    path, state = saved
    partial = dict(state)
    del partial['decode_head.conv_seg.weight']
    partial['decode_head.projection.weight'] = torch.zeros(3)
    bad = tmp_path / 'partial.pth'
    torch.save(
        dict(meta=dict(experiment_name='other_run'), state_dict=partial), bad)
    with pytest.raises(CheckpointMismatchError) as err:
        init_model_checked(_config(toy_root), str(bad))
    message = str(err.value)
    assert 'missing from the checkpoint: 1 of the model' in message
    assert 'decode_head.conv_seg.weight' in message
    assert 'unexpected in the checkpoint (not in the model): 1 weight ' \
        'tensor(s): decode_head.projection.weight' in message
    assert "written by the run 'other_run'" in message
    # the data's class count against the checkpoint's
    with pytest.raises(
            CheckpointMismatchError,
            match='trained on 10 classes, the test dataset has '
            '9'):
        init_model_checked(
            _config(toy_root), path, dataset_classes=CLASSES[:9])


def test_tiny_images_are_refused_and_large_ones_get_a_note(saved, toy_root):
    """mmseg's inference_model on a 1×1 image returned a
    1×1 map while training refuses such an image; (B) a large whole-image
    input is said to be slow, once, with the slide-mode remedy. A normal
    image is segmented as before."""
    import logging

    import numpy as np
    from mmengine.logging import MMLogger
    from mmseg.apis import inference_model

    from mmseg_sign.models.segmentors import ZeroShotEncoderDecoder
    model = init_model_checked(_config(toy_root), saved[0])
    with pytest.raises(
            ValueError,
            match=r'is 1×1: too small to segment '
            r'\(at least 2 pixels a side'):
        inference_model(model, np.zeros((1, 1, 3), np.uint8))
    assert inference_model(model, np.zeros(
        (2, 3, 3), np.uint8)).pred_sem_seg.data.shape[-2:] == (2, 3)
    # the note: a threshold lowered for the test (the default is 1024²)
    model.LARGE_WHOLE_IMAGE = 64 * 64
    ZeroShotEncoderDecoder._said_large = False
    logger = MMLogger.get_current_instance()
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        for _ in range(2):
            inference_model(model, np.zeros((72, 80, 3), np.uint8))
    finally:
        logger.removeHandler(handler)
    notes = [
        r.getMessage() for r in records
        if 'whole-image inference at 72×80' in r.getMessage()
    ]
    assert len(notes) == 1 and "mode='slide'" in notes[0]
