# Paper Table 4 on the toy: the model without the SIM (E = backbone + ASPP,
# sigmoid features; the latent is noise: NoisePriorNeck), its backbone
# widened from 16 to 18 base channels so that the inference model keeps
# about SIGN's parameter count (1.16M vs 1.18M), as the paper does. Table 4
# reads its seen mIoU before transfer (the row at the train stage's end).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(
    backbone=dict(base_channels=18, stem_channels=18),
    neck=dict(
        _delete_=True,
        type='NoisePriorNeck',
        in_channels=144,  # 8 x 18: the widened backbone's last stage
        channels=_base_.model.neck.channels,
        dilations=_base_.model.neck.dilations))
