# sign_lite0_camvid-480x360 without self-training (train + transfer): the
# base of the ImageNet-feature CamVid baselines with a generator.
_base_ = ['./sign_lite0_camvid-480x360.py']

train_cfg = dict(stages=_base_.train_cfg.stages[:2])
