# CaGNet + ST on Pascal VOC: cagnet_voc.py, then CaGNet's self-training (best
# unseen class when among the top-k logits; configs_st_voc.yaml: k = 1) for
# as long as SIGN's self-training (configs/sign/sign_voc_st.py).
_base_ = ['./cagnet_voc.py']
train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='ST_topk',
        top_k=1),
])
