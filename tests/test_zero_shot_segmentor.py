"""ZeroShotEncoderDecoder: stage steps update exactly the right weights."""
import copy

import pytest
import torch
from mmengine.config import ConfigDict
from mmengine.structures import PixelData

from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from mmseg.structures import SegDataSample


def tiny_model(emb_path):
    return MODELS.build(
        dict(
            type='ZeroShotEncoderDecoder',
            data_preprocessor=dict(
                type='SegDataPreProcessor', mean=[0, 0, 0], std=[1, 1, 1],
                size=(16, 16), seg_pad_val=255),
            backbone=dict(
                type='ResNetV1c', depth=18, base_channels=4, stem_channels=4,
                out_indices=(3, ), strides=(1, 2, 1, 1),
                dilations=(1, 1, 2, 4), norm_cfg=dict(type='BN')),
            neck=dict(
                type='SIM', in_channels=32, channels=8, dilations=(1, 2),
                pe_channels=8, num_heads=2, latent_channels=4),
            decode_head=dict(
                type='SIGNHead', in_channels=8, channels=8, num_classes=5,
                class_embeddings=emb_path, latent_channels=4,
                generator_hidden=(16, ), discriminator_hidden=(16, ),
                unseen_classes=['c3', 'c4']),
            test_cfg=ConfigDict(mode='whole')))


def optim_wrappers(model):
    return OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type='ModuleGroupOptimWrapperConstructor',
            optim_wrapper_cfg=dict(
                segmentor=dict(
                    optimizer=dict(type='SGD', lr=0.1, momentum=0.9),
                    modules=['backbone', 'neck', 'decode_head.conv_seg'],
                    lr_mult=dict(neck=10.0)),
                generator=dict(
                    optimizer=dict(type='Adam', lr=1e-2),
                    modules=['decode_head.generator']),
                discriminator=dict(
                    optimizer=dict(type='Adam', lr=1e-2),
                    modules=['decode_head.discriminator']),
                transfer=dict(
                    optimizer=dict(type='SGD', lr=0.1),
                    modules=['decode_head.conv_seg']),
                self_train=dict(
                    optimizer=dict(type='SGD', lr=0.1),
                    modules=['backbone', 'neck', 'decode_head.conv_seg']))))(
                        model)


def batch():
    g = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(2):
        inputs.append(torch.randint(0, 255, (3, 16, 16), generator=g,
                                    dtype=torch.uint8))
        label = torch.randint(0, 3, (1, 16, 16), generator=g)
        label[:, :3] = 255
        s = SegDataSample(gt_sem_seg=PixelData(data=label))
        s.set_metainfo(dict(img_shape=(16, 16), ori_shape=(16, 16)))
        samples.append(s)
    return dict(inputs=inputs, data_samples=samples)


def changed(before, after):
    return {k for k in before if not torch.equal(before[k], after[k])}


def groups(keys):
    out = set()
    for k in keys:
        if k.startswith('decode_head.'):
            out.add('.'.join(k.split('.')[:2]))
        else:
            out.add(k.split('.')[0])
    return out


@pytest.mark.parametrize('stage, want', [
    ('train', {'backbone', 'neck', 'decode_head.conv_seg',
               'decode_head.generator', 'decode_head.discriminator'}),
    ('transfer', {'decode_head.conv_seg'}),
    ('self_train', {'backbone', 'neck', 'decode_head.conv_seg'}),
])
def test_stage_updates_only_its_parameters(embedding_table, stage, want):
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0])
    model.train()
    ow = optim_wrappers(model)
    model.set_stage(stage)
    before = copy.deepcopy(model.state_dict())
    log_vars = model.train_step(batch(), ow)
    after = model.state_dict()
    assert groups(changed(before, after)) == want
    # the word-embedding mapping M never changes
    assert torch.equal(before['decode_head.class_embedding'],
                       after['decode_head.class_embedding'])
    for v in log_vars.values():
        assert torch.isfinite(v)
    if stage == 'train':
        assert {'loss_ce', 'loss_kld', 'loss_mmd', 'loss_adv_g',
                'loss_adv_d'} <= set(log_vars)
    elif stage == 'transfer':
        assert {'loss_ce', 'loss_ce_synth'} <= set(log_vars)
    else:
        assert {'loss_ce_st', 'loss_ce_synth', 'st_pixels', 'st_weight',
                'st_confidence'} <= set(log_vars)
        assert log_vars['st_pixels'] > 0


@pytest.mark.parametrize('mode', ['ST', 'AST'])
def test_self_train_teacher_is_frozen_copy(embedding_table, mode):
    torch.manual_seed(0)
    model = tiny_model(embedding_table[0])
    model.train()
    ow = optim_wrappers(model)
    start = copy.deepcopy(model.state_dict())
    model.set_stage('self_train', mode=mode, temperature=2.0, top_p=50)
    teacher = model.teacher
    assert teacher is not None and not teacher.training
    # not a sub-module: neither in the student's state_dict nor parameters
    assert not any(k.startswith('teacher') for k in model.state_dict())
    assert all(not p.requires_grad for p in teacher.parameters())
    for _ in range(2):
        model.train_step(batch(), ow)
    t_state = teacher.state_dict()
    for key, value in start.items():
        assert torch.equal(t_state[key], value), key
    assert model.teacher is teacher  # kept for the whole stage
    assert changed(start, model.state_dict())
    model.set_stage('transfer')
    assert model.teacher is None


def test_lr_mult_and_inference_path(embedding_table):
    model = tiny_model(embedding_table[0])
    ow = optim_wrappers(model)
    lrs = [g['lr'] for g in ow['segmentor'].optimizer.param_groups]
    assert lrs == [0.1, 1.0, 0.1]
    model.eval()
    out = model.test_step(batch())
    assert out[0].pred_sem_seg.data.shape == (1, 16, 16)


def test_constructor_errors(embedding_table):
    model = tiny_model(embedding_table[0])
    build = OPTIM_WRAPPER_CONSTRUCTORS.get(
        'ModuleGroupOptimWrapperConstructor')
    with pytest.raises(ValueError, match="no sub-module 'decode_head.gen'"):
        build(dict(g=dict(optimizer=dict(type='SGD', lr=1),
                          modules=['decode_head.gen'])))(model)
    with pytest.raises(ValueError, match='needs `modules`'):
        build(dict(g=dict(optimizer=dict(type='SGD', lr=1))))(model)
    model.set_stage('transfer')
    with pytest.raises(KeyError, match="needs the optimizer wrappers"):
        model.train_step(batch(), build(dict(
            g=dict(optimizer=dict(type='SGD', lr=1),
                   modules=['backbone'])))(model))
