# ZS3Net + ST on Pascal Context: zs3net_context.py,
# then ZS3's self-training (the 75 %
# most confident pixels per unseen class among those predicted unseen) for
# as long as SIGN's (configs/sign/sign_context_st.py).
_base_ = ['./zs3net_context.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST',
        top_p=75.0),
])
