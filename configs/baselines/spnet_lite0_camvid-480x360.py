# SPNet on CamVid with ImageNet features: E of SIGN's model (Lite0 + the MLP
# fusion) projecting into the word-embedding space, the class embeddings as
# the classifier, trained on the seen classes with the ceiling's recipe
# (AdamW, backbone at 0.1x, poly to 1e-4, ENet's class weights) for 1600
# iterations, as many as sign_lite0_camvid-480x360's train + transfer
# stages. Calibrated stacking: test_evaluator.calibration_sweep.
_base_ = [
    '../_base_/models/spnet_lite0_mlp-fusion.py',
    '../_base_/datasets/camvid_zs_480x360.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/spnet_46k.py',
    '../_base_/schedules/lite0_adamw_poly.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        loss_decode=dict(
            type='ClassWeightedCrossEntropyLoss',
            class_weight=_base_.class_weight)))
iters = 1600
optim_wrapper = dict(
    optimizer=dict(_base_.lite0_optimizer, _delete_=True),
    paramwise_cfg=dict(_base_.lite0_paramwise_cfg, _delete_=True))
param_scheduler = [dict(_base_.lite0_poly, end=iters)]
train_cfg = dict(max_iters=iters, val_interval=iters)
default_hooks = dict(
    logger=dict(interval=50),
    checkpoint=dict(interval=iters),
    visualization=dict(interval=5))
randomness = dict(seed=0)
