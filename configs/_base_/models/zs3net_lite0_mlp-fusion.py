# ZS3Net on ImageNet features: sign_lite0_mlp-fusion.py's encoder E (Lite0 +
# MLPFusion) with Gaussian noise as the latent (NoisePriorNeck), a GMMN
# generator trained by the MMD alone (zs3net_r18-tiny_toy.py's).
_base_ = ['./sign_lite0_mlp-fusion.py']
model = dict(
    neck=dict(
        _delete_=True,
        type='NoisePriorNeck',
        **_base_.levels,
        channels=_base_.feat_channels,
        input_proj=_base_.model.neck.input_proj),
    decode_head=dict(
        adversarial=False,
        generator=dict(
            type='PixelMLPGenerator', hidden_channels=(256, ), dropout=0.5)))
