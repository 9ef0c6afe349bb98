# CaGNet + ST on CamVid: cagnet_camvid.py, then CaGNet's self-training
# (a pixel is labelled with its best unseen class when that class is among
# its top-k logits; CaGNet's self-training config: k = 1).
_base_ = ['./cagnet_camvid.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST_topk',
        top_k=1),
])
