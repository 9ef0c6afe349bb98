# SPNet (Xian et al., CVPR 2019) on Pascal VOC (15 seen / 5 unseen),
# DeepLab-v2 R101,
# the class embeddings of configs/sign/sign_voc.py. Calibrated stacking:
# test_evaluator.calibration_sweep.
_base_ = [
    '../_base_/models/spnet_deeplabv2_r101.py',
    '../_base_/datasets/voc12_aug_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/spnet_46k.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=_base_.head_classes)
log_processor = dict(by_epoch=False)
