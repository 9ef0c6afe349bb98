# ZS3Net (Bucher et al., NeurIPS 2019; paper Table 1) on Pascal VOC: the
# ZS3Net model base (zs3net_deeplabv2_r101.py: E of SIGN's model with Gaussian
# noise as the latent, a GMMN generator, no discriminator) on SIGN's
# dataset and schedule (configs/sign/sign_voc.py), its transfer stage
# retraining the classifier on real seen and generated features.
_base_ = [
    '../_base_/models/zs3net_deeplabv2_r101.py',
    '../_base_/datasets/voc12_aug_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_40k_6k.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=9))  # unseen share of sampled labels: 5·10/65 = 77 %
log_processor = dict(by_epoch=False)
train_cfg = dict(stages=[
    _base_.train_cfg.stages[0],
    dict(
        name='transfer',
        iters=_base_.train_cfg.stages[1].iters,
        mode='classifier',
        real_weight=1.0,
        synth_weight=1.0),
])
