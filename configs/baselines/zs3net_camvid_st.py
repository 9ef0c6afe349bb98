# ZS3Net + ST on CamVid: zs3net_camvid.py, then ZS3's self-training (the
# 75 % most confident pixels per unseen class among those predicted unseen).
_base_ = ['./zs3net_camvid.py']
stages = [
    *_base_.stages,
    dict(name='self_train', iters=_base_.self_train_iters, mode='ST',
         top_p=75.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
