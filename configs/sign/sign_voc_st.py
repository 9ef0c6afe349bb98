# sign_voc + self-training (ST: ZS3, the top 75 % most confident per
# unseen class among pixels predicted unseen).
_base_ = ['./sign_voc.py']

stages = [
    dict(name='train', iters=40000),
    dict(name='transfer', iters=6000, mode='alternate'),
    dict(name='self_train', iters=6000, mode='ST', top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
