# sign_voc + annealed self-training (AST, eq. 16).
_base_ = ['./sign_voc.py']

stages = [
    *_base_.stages,
    dict(name='self_train', iters=_base_.self_train_iters, mode='AST',
         temperature=2.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
