# CaGNet + ST on CamVid with ImageNet features: cagnet_lite0_camvid-480x360,
# then CaGNet's self-training (top-k = 1, as cagnet_camvid_st.py).
_base_ = ['./cagnet_lite0_camvid-480x360.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST_topk',
        top_k=1),
])
