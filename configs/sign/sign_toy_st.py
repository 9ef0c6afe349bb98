# sign_toy with plain self-training (ST: top-p pseudo labels, weight 1)
# instead of AST.
_base_ = ['./sign_toy.py']

stages = [
    dict(name='train', iters=600),
    dict(name='transfer', iters=200, mode='alternate', block_iters=25),
    dict(name='self_train', iters=200, mode='ST', top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
