# Pascal VOC 2012 + SBD, 15 seen / 5 unseen (SPNet / CaGNet / SIGN protocol).
# Prepare with mmseg's converter (docs/user_guide.md, "Datasets").
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

dataset_type = 'ZeroShotPascalVOCDataset'
data_root = 'data/VOCdevkit/VOC2012'
crop_size = (368, 368)
# What a zero-shot head takes from this dataset (a model config passes
# it on: decode_head=dict(_base_.head_classes, ...)): the number of
# classes and the class-embedding table: the published CaGNet
# vectors (docs/user_guide.md, "Class embeddings"):
#   python tools/dataset_converters/cagnet_word_vectors.py --dataset voc \
#       --fasttext fasttext.pkl --word2vec word2vec.pkl \
#       --out data/embeddings/voc20_cagnet_fasttext_word2vec.npz
head_classes = dict(
    num_classes=20,
    class_embeddings='data/embeddings/'
    'voc20_cagnet_fasttext_word2vec.npz')
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    dict(type='MaskUnseenClasses'),
    dict(
        type='RandomResize',
        scale=(512, 512),
        ratio_range=(0.5, 1.5),
        keep_ratio=True),
    dict(type='RandomCrop', crop_size=crop_size, cat_max_ratio=0.75),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PhotoMetricDistortion'),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(512, 512), keep_ratio=True),
    dict(type='LoadAnnotations'),
    dict(type='CheckSegLabels'),
    dict(type='PackSegInputs'),
]
train_dataloader = dict(
    batch_size=8,
    num_workers=4,
    persistent_workers=True,
    sampler=dict(type='InfiniteSampler', shuffle=True),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(
            img_path='JPEGImages', seg_map_path='SegmentationClassAug'),
        ann_file='ImageSets/Segmentation/aug.txt',
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=1,
    num_workers=4,
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
val_evaluator = dict(type='GZSLIoUMetric')
test_evaluator = val_evaluator

# test-time augmentation (``tools/test.py --tta``; ``tta_model`` comes from
# mmseg's default_runtime.py): the test scale times img_ratios, each with
# and without a horizontal flip; the logits are averaged (SegTTAModel)
img_ratios = [0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
tta_pipeline = [
    dict(type='LoadImageFromFile', backend_args=None),
    dict(
        type='TestTimeAug',
        transforms=[
            [
                dict(
                    type='Resize',
                    scale=(int(512 * r), int(512 * r)),
                    keep_ratio=True) for r in img_ratios
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
