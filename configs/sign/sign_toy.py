# SIGN on the built-in toy data: all three stages (train, transfer, annealed
# self-training) in a few minutes on 2 CPU cores.
# Data: `python tools/make_toy_dataset.py` (writes data/toy).
_base_ = [
    '../_base_/datasets/toy.py',
    'mmseg::_base_/default_runtime.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

# ---------------------------------------------------------------- stages
# One tools/train.py run does them all; SIGNStageHook picks the stage from
# the iteration, so --resume lands in the right one.
train_iters, transfer_iters, self_train_iters = 600, 200, 200
stages = [
    dict(name='train', iters=train_iters),  # E, SIM (ce + kld); C + D; G
    # blocks of 25: C (+ D, G) on real + fake seen, then C on fakes of
    # sampled labels (unseen prior 1 + gen_unseen_rate)
    dict(name='transfer', iters=transfer_iters, mode='alternate',
         block_iters=25),
    # E, SIM, C on seen labels + teacher's unseen pseudo labels (eq. 16);
    # T = 0.1: the toy teacher's unseen confidences are low (~0.1-0.4), so
    # the paper's T = 2 (VOC) makes the weights nearly uniform here
    dict(name='self_train', iters=self_train_iters, mode='AST',
         temperature=0.1),
]
max_iters = train_iters + transfer_iters + self_train_iters

# ---------------------------------------------------------------- model
norm_cfg = dict(type='BN', requires_grad=True)
feat_channels = 64
crop_size = (64, 64)  # as in the dataset base
model = dict(
    type='ZeroShotEncoderDecoder',
    data_preprocessor=dict(
        type='SegDataPreProcessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_val=0,
        seg_pad_val=255,
        size=crop_size),
    pretrained=None,
    backbone=dict(
        type='ResNetV1c',
        depth=18,
        base_channels=16,
        stem_channels=16,
        num_stages=4,
        out_indices=(3, ),
        dilations=(1, 1, 2, 4),
        strides=(1, 2, 1, 1),
        norm_cfg=norm_cfg,
        norm_eval=False,
        style='pytorch',
        contract_dilation=True),
    neck=dict(
        type='SIM',
        in_channels=128,
        channels=feat_channels,
        input_proj='aspp',
        dilations=(1, 2, 3, 4),
        pe_type='relative',
        pe_channels=feat_channels,
        arch='multihead_self_attention',
        num_heads=4,
        latent_channels=feat_channels,
        latent_hidden=feat_channels),
    decode_head=dict(
        type='SIGNHead',
        in_channels=feat_channels,
        channels=feat_channels,
        num_classes=10,
        dropout_ratio=0.1,
        align_corners=False,
        class_embeddings='data/toy/class_embeddings.npz',
        latent_channels=feat_channels,
        generator_hidden=(256, 256),
        generator_dropout=0.2,
        classifier='shared_trunk',  # C and D on one trunk, as the authors
        trunk_channels=128,
        mmd_max_pixels=128,
        gen_unseen_rate=3),  # unseen share of sampled labels: 3·4/19 = 63 %
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
model_wrapper_cfg = dict(type='ZeroShotDataParallel')

# ------------------------------------------------------------ optimizers
# All six are built up front (resume restores every state).
classifier_modules = ['decode_head.trunk', 'decode_head.conv_seg']
optim_wrapper = dict(
    constructor='ModuleGroupOptimWrapperConstructor',
    segmentor=dict(
        optimizer=dict(type='SGD', lr=0.01, momentum=0.9, weight_decay=5e-4),
        clip_grad=dict(max_norm=10.0),  # from scratch: keeps KL (α=100) sane
        modules=['backbone', 'neck']),
    generator=dict(
        optimizer=dict(type='Adam', lr=1e-3, betas=(0.5, 0.999)),
        modules=['decode_head.generator']),
    discriminator=dict(  # D and C (shared trunk)
        optimizer=dict(type='Adam', lr=1e-3, betas=(0.5, 0.999)),
        modules=['decode_head.discriminator', *classifier_modules]),
    # transfer: 200 iterations here (6000 in the paper configs, Adam 5e-5)
    transfer=dict(  # D and C (shared trunk)
        optimizer=dict(type='Adam', lr=1e-3, betas=(0.5, 0.999)),
        modules=['decode_head.discriminator', *classifier_modules]),
    transfer_generator=dict(
        optimizer=dict(type='Adam', lr=1e-3, betas=(0.5, 0.999)),
        modules=['decode_head.generator']),
    self_train=dict(
        optimizer=dict(type='SGD', lr=2e-3, momentum=0.9, weight_decay=5e-4),
        clip_grad=dict(max_norm=10.0),
        modules=['backbone', 'neck', *classifier_modules]))
param_scheduler = dict(
    segmentor=[
        dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0,
             end=train_iters, by_epoch=False)
    ],
    generator=[],
    discriminator=[],
    transfer=[],
    transfer_generator=[],
    self_train=[])

# ------------------------------------------------------------ schedule
train_cfg = dict(
    type='IterBasedTrainLoop',
    max_iters=max_iters,
    val_interval=max_iters)  # SIGNStageHook also validates at stage ends
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
        type='CheckpointHook', by_epoch=False, interval=train_iters,
        save_last=True),
    sampler_seed=dict(type='DistSamplerSeedHook'),
    visualization=dict(type='SegVisualizationHook', interval=5))
log_processor = dict(by_epoch=False)
randomness = dict(seed=0)
