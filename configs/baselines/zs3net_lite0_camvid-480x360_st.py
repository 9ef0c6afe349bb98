# ZS3Net + ST on CamVid with ImageNet features: zs3net_lite0_camvid-480x360,
# then ZS3's self-training (as zs3net_camvid_st.py).
_base_ = ['./zs3net_lite0_camvid-480x360.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST',
        top_p=75.0),
])
