# ZS3Net (Bucher et al., NeurIPS 2019; paper Table 1) at toy scale: the
# encoder E of sign_r18-tiny_toy.py (tiny ResNet-18 + ASPP) with Gaussian
# noise as the latent code (no SIM, no image-dependent prior:
# NoisePriorNeck); G a GMMN (one hidden layer of 256, LeakyReLU, dropout
# 0.5) trained by the MMD alone, no discriminator (adversarial=False: the
# SIGN schedules' wrappers of D + C then train C alone). Its transfer stage
# retrains C on real seen and generated features (mode='classifier',
# configs/baselines/zs3net_toy.py).
_base_ = ['./sign_r18-tiny_toy.py']
model = dict(
    neck=dict(
        _delete_=True,
        type='NoisePriorNeck',
        in_channels=_base_.model.neck.in_channels,  # E's ASPP, as SIGN's
        channels=_base_.model.neck.channels,
        dilations=_base_.model.neck.dilations),
    decode_head=dict(
        adversarial=False,
        generator=dict(
            type='PixelMLPGenerator', hidden_channels=(256, ), dropout=0.5)))
