# SIGN's three-stage plan on CamVid with ImageNet features (configs/sign/
# sign_lite0_camvid-480x360.py): sign_camvid_2000_400_400.py's plan, hooks
# and the generator / classifier optimizers, with the supervised ceiling's
# recipe for the encoder (configs/baselines/supervised_lite0_camvid-480x360.py,
# chosen on held-out training photographs: AdamW 1e-3, weight decay 0.01,
# the pretrained backbone at a tenth of that, poly to 1e-4 over its 1200
# iterations) in the train stage, and at its starting rates, constant, for
# self-training (the toy's convention: the train stage's optimizers again).
_base_ = ['./sign_camvid_2000_400_400.py', './lite0_adamw_poly.py']
train_iters = 1200
train_cfg = dict(stages=[
    dict(_base_.train_cfg.stages[0], iters=train_iters),
    *_base_.train_cfg.stages[1:],
])
encoder_optim = dict(
    optimizer=dict(_delete_=True, **_base_.lite0_optimizer),
    paramwise_cfg=_base_.lite0_paramwise_cfg)
optim_wrapper = dict(segmentor=encoder_optim, self_train=encoder_optim)
param_scheduler = dict(segmentor=[dict(_base_.lite0_poly, end=train_iters)])
default_hooks = dict(checkpoint=dict(interval=train_iters))
