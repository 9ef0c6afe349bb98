# SPNet on ImageNet features: sign_lite0_mlp-fusion.py's encoder (Lite0 +
# MLPFusion) projecting into the word-embedding space, the fixed class
# embeddings as the classifier (SPNetHead).
_base_ = ['./sign_lite0_mlp-fusion.py']
model = dict(
    type='EncoderDecoder',
    neck=None,
    decode_head=dict(
        _delete_=True,
        type='SPNetHead',
        **_base_.levels,
        input_transform='multiple_select',
        input_proj=_base_.model.neck.input_proj,
        num_classes=None,  # set per dataset
        class_embeddings=None,  # set per dataset
        align_corners=False))
model_wrapper_cfg = None  # mmengine's default (DDP)
