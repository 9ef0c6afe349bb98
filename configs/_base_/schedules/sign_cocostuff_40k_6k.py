# SIGN's plan on COCO-Stuff (configs/sign/sign_cocostuff.py, the authors'
# COCO-Stuff recipe): sign_40k_6k.py with the transfer's synthetic weight 1
# and Adam 1e-5, and 4k iterations of self-training (appended by the + ST
# / + AST configs).
_base_ = ['./sign_40k_6k.py']
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(_base_.train_cfg.stages[1], synth_weight=1.0),
])
self_train_iters = 4000
optim_wrapper = dict(
    transfer=dict(optimizer=dict(lr=1e-5)),
    transfer_generator=dict(optimizer=dict(lr=1e-5)))
