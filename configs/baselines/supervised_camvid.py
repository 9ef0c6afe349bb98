# The fully supervised ceiling on CamVid (docs/camvid.md): the backbone and
# ASPP of configs/sign/sign_camvid.py (tiny ResNet-18 from scratch, ASPP
# dilations 1-4, 128 -> 64) with a plain 1×1 classifier (mmseg's
# EncoderDecoder + ASPPHead), trained on all 10 classes (unseen ones
# labelled too) for sign_camvid's train + transfer length; evaluated on the
# same split, so that seen / unseen / harmonic mIoU are comparable.
_base_ = ['./spnet_camvid.py']
model = dict(
    decode_head=dict(
        _delete_=True,
        type='ASPPHead',
        in_channels=128,
        channels=64,
        dilations=(1, 2, 3, 4),
        dropout_ratio=0.1,
        num_classes=10,
        norm_cfg={{_base_.norm_cfg}},
        align_corners=False,
        loss_decode=dict(
            type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0)))
# every class seen in training (no pixel masked); validation keeps the
# zero-shot split for the table's columns (the splits differ on purpose:
# tools/test.py scores such a checkpoint on the zero-shot split)
allow_split_change = True
train_dataloader = dict(
    dataset=dict(
        seen_classes=[
            'sky', 'building', 'road', 'pavement', 'tree', 'sign', 'fence',
            'car', 'pedestrian', 'bicyclist'
        ],
        pipeline=[
            t for t in _base_.train_pipeline if t.type != 'MaskUnseenClasses'
        ]))
# the splits differ on purpose: no ClassSplitHook (it would refuse them)
default_hooks = dict(
    _delete_=True,
    **{k: v
       for k, v in _base_.default_hooks.items() if k != 'sign_split'})
