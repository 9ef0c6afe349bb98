# sign_lite0_camvid-480x360 with plain self-training (ST: top-p pseudo
# labels, weight 1) instead of AST.
_base_ = ['./sign_lite0_camvid-480x360.py']

train_cfg = dict(stages=[
    *_base_.train_cfg.stages[:2],
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST',
        top_p=75.0),
])
