# ZS3Net on CamVid with ImageNet features: E of SIGN's model (Lite0 + the
# MLP fusion) with Gaussian noise as the latent, a GMMN generator, on
# sign_lite0_camvid-480x360's data, class weights and schedule; its
# transfer stage retrains the classifier on real seen and generated
# features (as zs3net_camvid.py).
_base_ = [
    '../_base_/models/zs3net_lite0_mlp-fusion.py',
    '../_base_/datasets/camvid_zs_480x360.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_lite0_camvid_1200_400_400.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=3,
        loss_decode=dict(
            type='ClassWeightedCrossEntropyLoss',
            class_weight=_base_.class_weight,
            loss_name='loss_ce')))
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
