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


def toy_batch(n=2, size=64, num_classes=10):
    from mmengine.structures import PixelData
    from mmseg.structures import SegDataSample
    g = torch.Generator().manual_seed(0)
    inputs, samples = [], []
    for _ in range(n):
        inputs.append(
            torch.randint(
                0, 255, (3, size, size), generator=g, dtype=torch.uint8))
        # the last class is the unseen one (run_every_stage): never labelled
        label = torch.randint(0, num_classes - 1, (1, size, size), generator=g)
        sample = SegDataSample(gt_sem_seg=PixelData(data=label))
        sample.set_metainfo(
            dict(img_shape=(size, size), ori_shape=(size, size)))
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


def run_every_stage(cfg, emb_path, size=64, num_classes=10):
    """One step of each stage of the config's plan with its own options
    (both blocks of an alternating transfer), then inference."""
    from mmseg_sign.structures.stage_plan import stage_options
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
    stages = [
        stage_options(i, s) for i, s in enumerate(cfg.train_cfg['stages'])
    ]
    for stage in stages:
        opts = {k: v for k, v in stage.items() if k not in ('name', 'iters')}
        model.set_stage(stage['name'], **opts)
        blocks = [0, opts['block_iters']] if opts.get('mode') == \
            'alternate' else [0]
        for stage_iter in blocks:
            model.stage_iter = stage_iter
            log_vars = model.train_step(
                toy_batch(size=size, num_classes=num_classes), ow)
            assert all(torch.isfinite(v) for v in log_vars.values()), stage
    model.eval()
    out = model.test_step(toy_batch(1, size, num_classes))
    assert out[0].pred_sem_seg.data.shape == (1, size, size)
    return model


def build_head(path, **kwargs):
    cfg = dict(
        type='SIGNHead',
        in_channels=8,
        channels=8,
        num_classes=5,
        class_embeddings=path,
        latent_channels=4,
        generator_hidden=(16, ),
        generator_dropout=0.1,
        discriminator_hidden=(16, ),
        trunk_channels=16,
        unseen_classes=['c3', 'c4'],
        mmd_max_pixels=10)
    cfg.update(kwargs)
    return MODELS.build(cfg)


def samples(labels):
    out = []
    for label in labels:
        s = SegDataSample()
        s.gt_sem_seg = PixelData(data=label[None])
        s.set_metainfo(dict(img_shape=label.shape, pad_shape=label.shape))
        out.append(s)
    return out
