# CaGNet + ST on Pascal VOC: cagnet_voc.py, then CaGNet's self-training (best
# unseen class when among the top-k logits; configs_st_voc.yaml: k = 1) for
# as long as SIGN's self-training (configs/sign/sign_voc_st.py).
_base_ = ['./cagnet_voc.py']
stages = [
    dict(name='train', iters=40000),
    dict(name='transfer', iters=6000, mode='alternate'),
    dict(name='self_train', iters=6000, mode='ST_topk', top_k=1),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
