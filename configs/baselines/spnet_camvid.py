# SPNet (Table 1's first row) on CamVid (docs/camvid.md): the backbone of
# configs/sign/sign_camvid.py, a projection into the word-embedding space
# and the fixed class embeddings as the classifier, trained on the seen
# classes. 2400 iterations of SGD (SIGN's segmentor optimizer), as many as
# sign_camvid's train + transfer stages. Calibrated stacking:
# test_evaluator.calibration_sweep.
_base_ = [
    '../_base_/models/spnet_r18-tiny_toy.py',
    '../_base_/datasets/camvid_zs.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/spnet_46k.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=_base_.head_classes)
iters = 2400
optim_wrapper = dict(
    optimizer=dict(lr=0.01),
    clip_grad=dict(max_norm=10.0),
    paramwise_cfg=dict(_delete_=True))
param_scheduler = [
    dict(
        type='PolyLR',
        power=0.9,
        eta_min=1e-4,
        begin=0,
        end=iters,
        by_epoch=False)
]
train_cfg = dict(max_iters=iters, val_interval=iters)
default_hooks = dict(
    logger=dict(interval=50),
    checkpoint=dict(interval=iters),
    visualization=dict(interval=5))
randomness = dict(seed=0)
