# SPNet (Xian et al., CVPR 2019) on DeepLab-v2 ResNet-101, as Table 1 runs
# every method: the backbone of sign_deeplabv2_r101.py with DeepLab-v2's
# ASPP projecting into the word-embedding space (600 = fastText ‖ word2vec)
# and the fixed class embeddings as the classifier (SPNetHead). A plain
# mmseg EncoderDecoder: one optimizer, no neck, no stages.
_base_ = ['./sign_deeplabv2_r101.py']
model = dict(
    type='EncoderDecoder',
    neck=None,
    decode_head=dict(
        _delete_=True,
        type='SPNetHead',
        in_channels=2048,
        dilations=(6, 12, 18, 24),
        num_classes=None,  # set per dataset
        class_embeddings=None,  # set per dataset
        align_corners=False,
        loss_decode=dict(
            type='CrossEntropyLoss', loss_weight=1.0, avg_non_ignore=True)),
    train_cfg=dict(_delete_=True))
model_wrapper_cfg = None  # mmengine's default (DDP)
