# SIGN's plan on Pascal Context (configs/sign/sign_context.py, the
# authors' Context recipe): sign_40k_6k.py with 10k iterations of transfer
# and 7k of self-training (appended by the + ST / + AST configs).
_base_ = ['./sign_40k_6k.py']
transfer_iters = 10000
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(_base_.train_cfg.stages[1], iters=transfer_iters),
])
self_train_iters = 7000
