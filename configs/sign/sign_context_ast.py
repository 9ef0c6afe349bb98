# sign_context + annealed self-training (AST, eq. 16).
_base_ = ['./sign_context.py']

stages = [
    dict(name='train', iters=40000),
    dict(name='transfer', iters=10000, mode='alternate'),
    dict(name='self_train', iters=7000, mode='AST', temperature=2.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
