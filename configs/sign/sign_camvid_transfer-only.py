# sign_camvid without self-training: the paper's plain "SIGN" (train +
# transfer); the base of the CamVid baselines with a generator.
_base_ = ['./sign_camvid.py']

stages = _base_.stages[:2]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
