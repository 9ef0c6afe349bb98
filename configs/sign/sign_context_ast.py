# sign_context + annealed self-training (AST, eq. 16).
_base_ = ['./sign_context.py']

train_cfg = dict(stages=[
    *_base_.train_cfg.stages,
    dict(
        name='self_train',
        iters=_base_.self_train_iters,
        mode='AST',
        temperature=2.0),
])
