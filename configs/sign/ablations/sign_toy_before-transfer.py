# The project's earlier transfer alone on the toy: C alone on real and
# synthetic features (weights 1 / 1) with a 50 % unseen share of the
# sampled labels (7 seen, 3 unseen: 3·(1 + 4/3) = 7).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(decode_head=dict(gen_unseen_rate=4 / 3))
stages = [
    _base_.stages[0],
    dict(name='transfer', iters=_base_.stages[1].iters, mode='classifier',
         real_weight=1.0, synth_weight=1.0),
]
custom_hooks = [
    dict(type='SIGNStageHook', stages=stages),
    dict(type='TorchRNGStateHook'),
]
