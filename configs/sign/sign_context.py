# SIGN on Pascal Context, 33 classes (4 unseen), DeepLab-v2 R101.
# Class embeddings (README, "Class embeddings"):
#   python tools/build_class_embeddings.py --dataset context --source ... \
#       --out data/embeddings/context33_w2v_ft.npz
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    '../_base_/datasets/pascal_context33_zs.py',
    'mmseg::_base_/default_runtime.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

# ---------------------------------------------------------------- stages
train_iters, transfer_iters = 40000, 10000
stages = [
    dict(name='train', iters=train_iters),  # E, SIM, C (ce + kld); G; D
    dict(name='transfer', iters=transfer_iters),  # C on real + synthetic
]

# ---------------------------------------------------------------- model
model = dict(
    data_preprocessor=dict(size=(368, 368)),
    decode_head=dict(
        num_classes=33,
        class_embeddings='data/embeddings/context33_w2v_ft.npz'))

# ------------------------------------------------------------ optimizers
# CaGNet / SIGN: SGD 2.5e-4 poly for the segmentor (10x for the new layers),
# Adam 2e-4 for G, Adam 2.5e-4 for D; C alone in the transfer stage.
optim_wrapper = dict(
    constructor='ModuleGroupOptimWrapperConstructor',
    segmentor=dict(
        optimizer=dict(
            type='SGD', lr=2.5e-4, momentum=0.9, weight_decay=5e-4),
        modules=['backbone', 'neck', 'decode_head.conv_seg'],
        lr_mult={'neck': 10.0, 'decode_head.conv_seg': 10.0}),
    generator=dict(
        optimizer=dict(type='Adam', lr=2e-4, betas=(0.5, 0.999)),
        modules=['decode_head.generator']),
    discriminator=dict(
        optimizer=dict(type='Adam', lr=2.5e-4, betas=(0.5, 0.999)),
        modules=['decode_head.discriminator']),
    transfer=dict(
        optimizer=dict(
            type='SGD', lr=2.5e-3, momentum=0.9, weight_decay=5e-4),
        modules=['decode_head.conv_seg']),
    self_train=dict(  # used by the *_st / *_ast variants
        optimizer=dict(
            type='SGD', lr=2.5e-4, momentum=0.9, weight_decay=5e-4),
        modules=['backbone', 'neck', 'decode_head.conv_seg'],
        lr_mult={'neck': 10.0, 'decode_head.conv_seg': 10.0}))
param_scheduler = dict(
    segmentor=[
        dict(type='PolyLR', power=0.9, eta_min=0.0, begin=0,
             end=train_iters, by_epoch=False)
    ],
    generator=[],
    discriminator=[],
    transfer=[],
    self_train=[])

# ------------------------------------------------------------ schedule
train_cfg = dict(
    type='IterBasedTrainLoop',
    max_iters=train_iters + transfer_iters,
    val_interval=4000)  # SIGNStageHook also validates at stage ends
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
default_hooks = dict(
    timer=dict(type='IterTimerHook'),
    logger=dict(type='LoggerHook', interval=50, log_metric_by_epoch=False),
    param_scheduler=dict(type='ParamSchedulerHook'),
    checkpoint=dict(
        type='CheckpointHook', by_epoch=False, interval=2000,
        save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='SegVisualizationHook'))
log_processor = dict(by_epoch=False)
