# sign_voc + self-training (ST: ZS3, the top 75 % most confident per
# unseen class among pixels predicted unseen).
_base_ = ['./sign_voc.py']

train_iters, transfer_iters, self_train_iters = 40000, 6000, 6000
stages = [
    dict(name='train', iters=train_iters),
    dict(name='transfer', iters=transfer_iters, mode='alternate'),
    dict(name='self_train', iters=self_train_iters, mode='ST', top_p=75.0),
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
