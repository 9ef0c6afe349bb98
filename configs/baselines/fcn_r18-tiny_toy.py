# A plain mmseg FCN (no zero-shot machinery) on the toy data: the reference
# point for GZSLIoUMetric (a supervised model never predicts unseen classes).
_base_ = [
    'mmseg::_base_/models/fcn_r50-d8.py',
    '../_base_/datasets/toy.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/toy_schedule.py',
]
norm_cfg = dict(type='BN', requires_grad=True)
crop_size = (64, 64)
data_preprocessor = dict(size=crop_size)
model = dict(
    data_preprocessor=data_preprocessor,
    pretrained=None,
    backbone=dict(
        depth=18, base_channels=16, stem_channels=16, norm_cfg=norm_cfg),
    decode_head=dict(
        in_channels=128,
        channels=64,
        num_convs=1,
        num_classes=10,
        norm_cfg=norm_cfg),
    auxiliary_head=None)
randomness = dict(seed=0)
