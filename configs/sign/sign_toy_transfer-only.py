# sign_toy without self-training: the paper's plain "SIGN" (train + transfer).
_base_ = ['./sign_toy.py']

stages = _base_.stages[:2]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
