# sign_cocostuff + annealed self-training (AST, eq. 16).
_base_ = ['./sign_cocostuff.py']

train_iters, transfer_iters, self_train_iters = 40000, 6000, 4000
stages = [
    dict(name='train', iters=train_iters),
    dict(name='transfer', iters=transfer_iters, mode='alternate',
         synth_weight=1.0),
    dict(name='self_train', iters=self_train_iters, mode='AST',
         temperature=2.0),
]
param_scheduler = dict(self_train=[
    dict(type='PolyLR', power=0.9, eta_min=0.0, by_epoch=False,
         begin=train_iters + transfer_iters,
         end=train_iters + transfer_iters + self_train_iters)
])
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
train_cfg = dict(
    max_iters=train_iters + transfer_iters + self_train_iters)
