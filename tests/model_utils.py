"""Small SIGN segmentors, their optimizer wrappers and a batch, for the
model and engine tests."""

import torch
from mmengine.config import ConfigDict
from mmengine.structures import PixelData
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS
from mmseg.structures import SegDataSample


def tiny_model(emb_path, classifier='linear'):
    return MODELS.build(
        dict(
            type='ZeroShotEncoderDecoder',
            data_preprocessor=dict(
                type='SegDataPreProcessor',
                mean=[0, 0, 0],
                std=[1, 1, 1],
                size=(16, 16),
                seg_pad_val=255),
            backbone=dict(
                type='ResNetV1c',
                depth=18,
                base_channels=4,
                stem_channels=4,
                out_indices=(3, ),
                strides=(1, 2, 1, 1),
                dilations=(1, 1, 2, 4),
                norm_cfg=dict(type='BN')),
            neck=dict(
                type='SIM',
                in_channels=32,
                channels=8,
                dilations=(1, 2),
                pe_channels=8,
                num_heads=2,
                latent_channels=8,
                latent_hidden=4),
            decode_head=dict(
                type='SIGNHead',
                in_channels=8,
                channels=8,
                num_classes=5,
                class_embeddings=emb_path,
                latent_channels=8,
                generator_hidden=(16, ),
                generator_dropout=0.0,
                classifier=classifier,
                trunk_channels=16,
                discriminator_hidden=(16, ),
                gen_unseen_rate=2,
                unseen_classes=['c3', 'c4']),
            test_cfg=ConfigDict(mode='whole')))


def optim_wrappers(model, st_update='train', sgd=False, amp_dtype=None):
    """The wrappers of the configs: C trains with the segmentor in the
    'linear' layout, with D (shared trunk) in the 'shared_trunk' one.
    Self-training has the train stage's three wrappers (``st_update=
    'train'``) or one for E, SIM and C (``'classifier'``). ``sgd``: plain
    SGD everywhere (the wrappers of one stage then step like those of
    another with the same learning rates). ``amp_dtype``: every wrapper a
    MixedPrecisionOptimWrapper of that dtype."""
    shared = model.decode_head.classifier == 'shared_trunk'
    c = ['decode_head.conv_seg'] + (['decode_head.trunk'] if shared else [])
    d = ['decode_head.discriminator'] + (c if shared else [])
    if st_update == 'train':
        seg = ['backbone', 'neck'] + ([] if shared else c)
        st = dict(
            self_train=dict(optimizer=dict(type='SGD', lr=0.1), modules=seg),
            self_train_generator=dict(
                optimizer=dict(type='SGD', lr=0.2) if sgd else dict(
                    type='Adam', lr=1e-2),
                modules=['decode_head.generator']),
            self_train_discriminator=dict(
                optimizer=dict(type='SGD', lr=0.3) if sgd else dict(
                    type='Adam', lr=1e-2),
                modules=d))
    else:
        st = dict(
            self_train=dict(
                optimizer=dict(type='SGD', lr=0.1),
                modules=['backbone', 'neck', *c]))
    if sgd:
        return OPTIM_WRAPPER_CONSTRUCTORS.build(
            dict(
                type='ModuleGroupOptimWrapperConstructor',
                optim_wrapper_cfg=dict(
                    segmentor=dict(
                        optimizer=dict(type='SGD', lr=0.1),
                        modules=st['self_train']['modules']),
                    generator=dict(
                        optimizer=dict(type='SGD', lr=0.2),
                        modules=['decode_head.generator']),
                    discriminator=dict(
                        optimizer=dict(type='SGD', lr=0.3), modules=d),
                    **st)))(
                        model)
    amp = dict(type='MixedPrecisionOptimWrapper', dtype=amp_dtype) \
        if amp_dtype else {}
    return OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(
            type='ModuleGroupOptimWrapperConstructor',
            optim_wrapper_cfg={
                name: dict(cfg, **amp)
                for name, cfg in dict(
                    segmentor=dict(
                        optimizer=dict(type='SGD', lr=0.1, momentum=0.9),
                        modules=['backbone', 'neck'] + ([] if shared else c),
                        paramwise_cfg=dict(
                            custom_keys={'neck': dict(lr_mult=10.0)})),
                    generator=dict(
                        optimizer=dict(type='Adam', lr=1e-2),
                        modules=['decode_head.generator']),
                    discriminator=dict(
                        optimizer=dict(type='Adam', lr=1e-2), modules=d),
                    transfer=dict(
                        optimizer=dict(type='Adam', lr=1e-2),
                        modules=c + ['decode_head.discriminator']),
                    transfer_generator=dict(
                        optimizer=dict(type='Adam', lr=1e-2),
                        modules=['decode_head.generator']),
                    **st).items()
            }))(
                model)


def batch():
    g = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(2):
        inputs.append(
            torch.randint(0, 255, (3, 16, 16), generator=g, dtype=torch.uint8))
        label = torch.randint(0, 3, (1, 16, 16), generator=g)
        label[:, :3] = 255
        s = SegDataSample(gt_sem_seg=PixelData(data=label))
        s.set_metainfo(dict(img_shape=(16, 16), ori_shape=(16, 16)))
        samples.append(s)
    return dict(inputs=inputs, data_samples=samples)


def changed(before, after):
    return {k for k in before if not torch.equal(before[k], after[k])}
