# SIGN on DeepLab-v2: ResNet-101 (output stride 8) + ASPP (dilations 6, 12,
# 18, 24, summed, 2048 -> 600) = the paper's encoder E; SIM with multi-head
# self-attention and relative positional encoding; SIGNHead (C, G, D, M).
norm_cfg = dict(type='SyncBN', requires_grad=True)
data_preprocessor = dict(
    type='SegDataPreProcessor',
    mean=[123.675, 116.28, 103.53],
    std=[58.395, 57.12, 57.375],
    bgr_to_rgb=True,
    pad_val=0,
    seg_pad_val=255)
model = dict(
    type='ZeroShotEncoderDecoder',
    data_preprocessor=data_preprocessor,
    pretrained='open-mmlab://resnet101_v1c',
    backbone=dict(
        type='ResNetV1c',
        depth=101,
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
        in_channels=2048,
        channels=600,
        input_proj='aspp',
        dilations=(6, 12, 18, 24),
        pe_type='relative',
        pe_channels=600,
        pe_scale=512.0,
        arch='multihead_self_attention',
        num_heads=8,
        latent_channels=600),
    decode_head=dict(
        type='SIGNHead',
        in_channels=600,
        channels=600,
        num_classes=None,  # set per dataset
        class_embeddings=None,  # set per dataset
        dropout_ratio=0.1,
        align_corners=False,
        latent_channels=600,
        generator_hidden=(1024, 960, 864, 784, 720),
        generator_dropout=0.5,
        discriminator_hidden=(512, ),
        loss_kld_weight=100.0,  # α, eq. 4
        loss_mmd_weight=50.0,  # β, eq. 7
        mmd_sigmas=(2, 5, 10, 20, 40, 80),
        mmd_max_pixels=256,
        synth_unseen_ratio=0.5),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
model_wrapper_cfg = dict(type='ZeroShotDataParallel')
