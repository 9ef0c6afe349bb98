# ZS3Net + ST on the toy data: zs3net_toy.py, then ZS3's self-training (the
# 75 % most confident pixels per unseen class among those predicted unseen).
_base_ = ['./zs3net_toy.py']
stages = [
    dict(name='train', iters=600),
    dict(name='transfer', iters=200, mode='classifier', real_weight=1.0,
         synth_weight=1.0),
    dict(name='self_train', iters=200, mode='ST', top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
