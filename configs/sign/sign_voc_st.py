# sign_voc + self-training (ST: ZS3, the top 75 % most confident per
# unseen class among pixels predicted unseen).
_base_ = ['./sign_voc.py']

train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST',
        top_p=75.0),
])
