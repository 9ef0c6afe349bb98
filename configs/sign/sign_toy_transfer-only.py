# sign_toy without self-training: the paper's plain "SIGN" (train + transfer).
_base_ = ['./sign_toy.py']

train_cfg = dict(stages=_base_.train_cfg.stages[:2])
