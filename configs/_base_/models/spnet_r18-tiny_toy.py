# SPNet at toy scale: the tiny ResNet-18 of sign_r18-tiny_toy.py, its ASPP
# dilations (1-4) projecting 128 -> the embedding width, the fixed class
# embeddings as the classifier (SPNetHead; spnet_deeplabv2_r101.py).
_base_ = ['./sign_r18-tiny_toy.py']
model = dict(
    type='EncoderDecoder',
    neck=None,
    decode_head=dict(
        _delete_=True,
        type='SPNetHead',
        in_channels=128,
        dilations=(1, 2, 3, 4),
        num_classes=None,  # set per dataset
        class_embeddings=None,  # set per dataset
        align_corners=False))
model_wrapper_cfg = None  # mmengine's default (DDP)
