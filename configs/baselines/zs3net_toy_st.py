# ZS3Net + ST on the toy data: zs3net_toy.py, then ZS3's self-training (the
# 75 % most confident pixels per unseen class among those predicted unseen).
_base_ = ['./zs3net_toy.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST',
        top_p=75.0),
])
