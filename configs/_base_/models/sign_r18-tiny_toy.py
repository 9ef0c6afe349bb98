# SIGN at toy scale (CPU, minutes; configs/sign/sign_toy.py): a tiny
# ResNet-18 (16 base channels, output stride 8, trained from scratch, BN
# trained) + ASPP (dilations 1-4, 128 -> 64) = the encoder E; SIM with
# multi-head self-attention, relative positional encoding and the
# reparameterisation module; SIGNHead (C and D on a shared trunk, G, M).
# The same structure as sign_deeplabv2_r101.py, every width cut to 64.
norm_cfg = dict(type='BN', requires_grad=True)
feat_channels = 64
model = dict(
    type='ZeroShotEncoderDecoder',
    data_preprocessor=dict(
        type='SegDataPreProcessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_val=0,
        seg_pad_val=255,
        size=None),  # set per dataset (the crop size)
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
        num_classes=None,  # set per dataset
        dropout_ratio=0.1,
        align_corners=False,
        class_embeddings=None,  # set per dataset
        latent_channels=feat_channels,
        generator_hidden=(256, 256),
        generator_dropout=0.2,
        classifier='shared_trunk',  # C and D on one trunk, as the authors
        trunk_channels=128,
        mmd_max_pixels=128,
        gen_unseen_rate=None),  # set per dataset
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
model_wrapper_cfg = dict(type='ZeroShotDataParallel')
