# ZS3Net (Bucher et al., NeurIPS 2019; paper Table 1)
# on the built-in toy data: the
# ZS3Net model base (zs3net_r18-tiny_toy.py: E of SIGN's model with Gaussian
# noise as the latent, a GMMN generator, no discriminator) on SIGN's
# dataset and schedule (configs/sign/sign_toy.py), its transfer stage
# retraining the classifier on real seen and generated features.
_base_ = [
    '../_base_/models/zs3net_r18-tiny_toy.py',
    '../_base_/datasets/toy.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_toy_600_400_400.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=3))  # unseen share of sampled labels: 3·4/19 = 63 %
randomness = dict(seed=0)
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(
        name='transfer',
        iters=_base_.train_cfg.stages[1].iters,
        mode='classifier',
        real_weight=1.0,
        synth_weight=1.0),
])
