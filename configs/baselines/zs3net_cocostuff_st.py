# ZS3Net + ST on COCO-Stuff: zs3net_cocostuff.py, then ZS3's self-training (the 75 %
# most confident pixels per unseen class among those predicted unseen) for
# as long as SIGN's (configs/sign/sign_cocostuff_st.py).
_base_ = ['./zs3net_cocostuff.py']
stages = [
    dict(name='train', iters=40000),
    dict(name='transfer', iters=6000, mode='classifier', real_weight=1.0,
         synth_weight=1.0),
    dict(name='self_train', iters=4000, mode='ST', top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
