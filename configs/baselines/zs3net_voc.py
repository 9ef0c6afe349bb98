# ZS3Net (Bucher et al., NeurIPS 2019) on Pascal VOC, DeepLab-v2 R101 as Table 1
# runs it: E of configs/sign/sign_voc.py with Gaussian noise as the latent
# (NoisePriorNeck), a GMMN generator (one hidden layer of 256, LeakyReLU,
# dropout 0.5) trained by the MMD alone, no discriminator, then the
# classifier retrained on real seen + generated features (transfer mode
# 'classifier'). Schedule and learning rates: SIGN's (docs/reproduction.md,
# "Baselines").
_base_ = ['../sign/sign_voc.py']
model = dict(
    neck=dict(
        _delete_=True,
        type='NoisePriorNeck',
        in_channels=_base_.model.neck.in_channels,  # E's ASPP, as SIGN's
        channels=_base_.model.neck.channels,
        dilations=_base_.model.neck.dilations),
    decode_head=dict(
        adversarial=False,
        generator=dict(type='PixelMLPGenerator', hidden_channels=(256, ),
                       dropout=0.5)))
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(name='transfer', iters=_base_.train_cfg.stages[1].iters,
         mode='classifier', real_weight=1.0, synth_weight=1.0),
])
# no D: the wrappers of D (+ C) train C alone
classifier_modules = ['decode_head.trunk', 'decode_head.conv_seg']
optim_wrapper = dict(
    discriminator=dict(modules=classifier_modules),
    transfer=dict(modules=classifier_modules),
    self_train_discriminator=dict(modules=classifier_modules))
