# Paper Table 4 on CamVid with ImageNet features: SIGN + AST
# (sign_lite0_camvid-480x360) without the SIM: E (Lite0 + the MLP fusion)
# gives sigmoid features and the latent is noise (NoisePriorNeck, as ZS3's
# model), SIGN's head, generator, discriminator and stages unchanged; the
# model minus its spatial prior, paired with SIGN after transfer and after
# AST (docs/camvid.md).
_base_ = ['../sign_lite0_camvid-480x360.py']
model = dict(
    neck=dict(
        _delete_=True,
        type='NoisePriorNeck',
        **_base_.levels,
        channels=_base_.feat_channels,
        input_proj=_base_.model.neck.input_proj))
