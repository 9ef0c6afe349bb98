# SIGN on DeepLab-v2: ResNet-101 (output stride 8) + ASPP (dilations 6, 12,
# 18, 24, summed, 2048 -> 600) = the paper's encoder E; SIM with multi-head
# self-attention, relative positional encoding and the reparameterisation
# module; SIGNHead (C and D on a shared trunk, G, M). The authors' recipe
# (docs/reproduction.md): backbone BN frozen (statistics and affine).
norm_cfg = dict(type='BN', requires_grad=False)
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
        norm_eval=True,
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
        latent_channels=600,
        latent_hidden=256,
        latent_dilations=(1, 2, 5),
        released_gates=True),  # sigmoid(ReLU(conv)), bias-free, as released
    decode_head=dict(
        type='SIGNHead',
        in_channels=600,
        channels=600,
        num_classes=None,  # set per dataset
        class_embeddings=None,  # set per dataset
        dropout_ratio=0.5,  # in the shared trunk, before C and D's head
        align_corners=False,
        loss_decode=dict(
            type='CrossEntropyLoss',
            loss_weight=0.5,
            avg_non_ignore=True,
            loss_name='loss_ce'),
        latent_channels=600,
        generator_hidden=(1024, 960, 864, 784, 720),
        generator_dropout=(0.1, 0.1, 0.3, 0.5, 0.5),
        generator_out_act='sigmoid',  # the range of F_x
        classifier='shared_trunk',
        trunk_channels=1024,
        loss_kld_weight=100.0,  # α, eq. 4
        loss_mmd_weight=50.0,  # β, eq. 7
        loss_ce_d_weight=1.0,  # C's CE in D's loss
        mmd_kernel_variances=(2, 5, 10, 20, 40, 60),  # variances, not stds
        mmd_max_pixels=256,
        mmd_estimator='released',  # sqrt(½·MMD²) per class, as released
        adv_d_reduction='sum',  # D: real + fake log losses, summed (released)
        gen_unseen_rate=None),  # set per dataset (VOC 9, Context 14, COCO 59)
    # DeepLab-v2 multi-scale CE: scales 1, 0.5, 0.75 and their max
    train_cfg=dict(ce_scales=(1.0, 0.5, 0.75)),
    test_cfg=dict(mode='whole'))
model_wrapper_cfg = dict(type='ZeroShotDataParallel')
