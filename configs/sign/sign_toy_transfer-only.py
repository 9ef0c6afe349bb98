# sign_toy without self-training: the paper's plain "SIGN" (train + transfer).
_base_ = ['./sign_toy.py']

train_iters, transfer_iters = 600, 200
stages = [
    dict(name='train', iters=train_iters),
    dict(name='transfer', iters=transfer_iters, mode='alternate',
         block_iters=25),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
