# The project's earlier transfer alone on the toy: C alone on real and
# synthetic features (weights 1 / 1) with a 50 % unseen share of the
# sampled labels (7 seen, 3 unseen: 3·(1 + 4/3) = 7).
_base_ = ['../sign_toy_transfer-only.py']
model = dict(decode_head=dict(gen_unseen_rate=4 / 3))
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(
        name='transfer',
        iters=_base_.train_cfg.stages[1].iters,
        mode='classifier',
        real_weight=1.0,
        synth_weight=1.0),
])
