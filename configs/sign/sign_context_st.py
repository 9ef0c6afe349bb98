# sign_context + self-training (ST: ZS3, the top 75 % most confident per
# unseen class among pixels predicted unseen).
_base_ = ['./sign_context.py']

stages = [
    *_base_.stages,
    dict(name='self_train', iters=_base_.self_train_iters, mode='ST',
         top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
