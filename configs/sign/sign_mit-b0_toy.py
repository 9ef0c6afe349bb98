# SIGN with a transformer backbone: SegFormer's MiT-b0 instead of ResNet.
# Any mmseg backbone works: replace `model.backbone` (with `_delete_=True`),
# then point the SIM at one of its outputs with `in_index` and
# `in_channels`; the SIM's ASPP projection maps it to the feature space.
_base_ = ['./sign_toy.py']
model = dict(
    backbone=dict(
        _delete_=True,
        type='MixVisionTransformer',
        in_channels=3,
        embed_dims=32,
        num_stages=4,
        num_layers=[2, 2, 2, 2],
        num_heads=[1, 2, 5, 8],
        patch_sizes=[7, 3, 3, 3],
        sr_ratios=[8, 4, 2, 1],
        out_indices=(0, 1, 2, 3),
        mlp_ratio=4,
        qkv_bias=True,
        drop_rate=0.0,
        attn_drop_rate=0.0,
        drop_path_rate=0.1),
    neck=dict(in_channels=64, in_index=1))  # stride-8 level, 64 channels
