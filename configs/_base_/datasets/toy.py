# The built-in toy zero-shot dataset: `python tools/make_toy_dataset.py`.
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

dataset_type = 'ZeroShotToyDataset'
data_root = 'data/toy'
crop_size = (64, 64)
# What a zero-shot head takes from this dataset (a model config passes
# it on: decode_head=dict(_base_.head_classes, ...)): the number of
# classes and the class-embedding table: written with the data by
# tools/make_toy_dataset.py.
head_classes = dict(
    num_classes=10, class_embeddings='data/toy/class_embeddings.npz')
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    # unseen-class pixels -> 255 (ignore); the image is kept
    dict(type='MaskUnseenClasses'),
    dict(type='RandomCrop', crop_size=crop_size),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    dict(type='CheckSegLabels'),
    dict(type='PackSegInputs'),
]
train_dataloader = dict(
    batch_size=8,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(
            img_path='JPEGImages', seg_map_path='SegmentationClass'),
        ann_file='ImageSets/Segmentation/train.txt',
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=1,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(
            img_path='JPEGImages', seg_map_path='SegmentationClass'),
        ann_file='ImageSets/Segmentation/val.txt',
        pipeline=test_pipeline))
test_dataloader = val_dataloader
# bootstrap: each score's sd over 1000 resamples of the 50 test images
# (docs/toy_results.md, the spread decomposition)
val_evaluator = dict(type='GZSLIoUMetric', bootstrap=1000)
test_evaluator = val_evaluator

# test-time augmentation (``tools/test.py --tta``; ``tta_model`` comes from
# mmseg's default_runtime.py): the image at img_ratios of its size, each
# with and without a horizontal flip; the logits are averaged (SegTTAModel)
img_ratios = [0.75, 1.0, 1.25]
tta_pipeline = [
    dict(type='LoadImageFromFile', backend_args=None),
    dict(
        type='TestTimeAug',
        transforms=[
            [
                dict(type='Resize', scale_factor=r, keep_ratio=True)
                for r in img_ratios
            ],
            [
                dict(type='RandomFlip', prob=0., direction='horizontal'),
                dict(type='RandomFlip', prob=1., direction='horizontal')
            ],
            [dict(type='LoadAnnotations')],
            [dict(type='CheckSegLabels')],
            [dict(type='PackSegInputs')],
        ])
]
