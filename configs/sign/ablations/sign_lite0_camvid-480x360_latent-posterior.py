# SIGN + AST on CamVid with ImageNet features (sign_lite0_camvid-480x360)
# whose transfer stage feeds the generator the SIM's latent of the batch's
# real pixels instead of z ~ N(0, I) (the released code; docs/reproduction.md):
# the variant an informative latent code needs (docs/camvid.md, "A SIGN
# whose latent code carries the class"; with a small KL weight, e.g.
# --cfg-options model.decode_head.loss_kld_weight=0.01).
_base_ = ['../sign_lite0_camvid-480x360.py']
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(_base_.train_cfg.stages[1], latent='posterior'),
    _base_.train_cfg.stages[2],
])
