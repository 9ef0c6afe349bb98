# sign_cocostuff + annealed self-training (AST, eq. 16).
_base_ = ['./sign_cocostuff.py']

stages = [
    dict(name='train', iters=40000),
    dict(name='transfer', iters=6000, mode='alternate',
         synth_weight=1.0),
    dict(name='self_train', iters=4000, mode='AST', temperature=2.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
