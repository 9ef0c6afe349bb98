# sign_camvid without self-training: the paper's plain "SIGN" (train +
# transfer); the base of the CamVid baselines with a generator.
_base_ = ['./sign_camvid.py']

train_cfg = dict(stages=_base_.train_cfg.stages[:2])
