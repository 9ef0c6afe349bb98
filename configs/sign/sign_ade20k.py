# SIGN on mmseg's own ADE20K-150 base (data/ade/ADEChallengeData2016, as
# mmseg prepares it), made zero-shot by the generic `ZeroShotDataset`.
# Split: ILLUSTRATIVE, not from a publication: every 10th class from #7
# (15 unseen, 135 seen). Class embeddings: a 150-class table in mmseg's class
# order (docs/user_guide.md, "Your own dataset"), e.g.
#   python -c "from mmseg.datasets import ADE20KDataset as D; \
#       print(*D.METAINFO['classes'], sep='\n')" > ade20k150.txt
#   python tools/build_class_embeddings.py --classes ade20k150.txt \
#       --source GoogleNews-vectors-negative300.bin:word2vec_binary \
#       --source crawl-300d-2M.vec:word2vec \
#       --out data/embeddings/ade20k150_w2v_ft.npz
_base_ = [
    '../_base_/models/sign_deeplabv2_r101.py',
    'mmseg::_base_/datasets/ade20k.py',
    'mmseg::_base_/default_runtime.py',
    '../_base_/schedules/sign_40k_6k.py',
]
custom_imports = dict(imports=['mmseg_sign'], allow_failed_imports=False)

unseen_classes = [
    'bed', 'plant', 'mirror', 'bathtub', 'sink', 'pillow', 'book', 'bar',
    'streetlight', 'ottoman', 'washer', 'cradle', 'bicycle', 'tray', 'glass'
]
# `type` replaces the base's 'ADE20KDataset'; data_root, data_prefix and
# pipeline of the base's dataset dicts are kept
zero_shot = dict(
    type='ZeroShotDataset',
    dataset_type='ADE20KDataset',
    unseen_classes=unseen_classes)
train_pipeline = [  # the base's, with the unseen pixels ignored
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='MaskUnseenClasses'),
    dict(
        type='RandomResize',
        scale=(2048, 512),
        ratio_range=(0.5, 2.0),
        keep_ratio=True),
    dict(type='RandomCrop', crop_size=(512, 512), cat_max_ratio=0.75),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PhotoMetricDistortion'),
    dict(type='PackSegInputs'),
]
train_dataloader = dict(dataset=dict(**zero_shot, pipeline=train_pipeline))
val_dataloader = dict(dataset=zero_shot)
test_dataloader = val_dataloader
val_evaluator = dict(type='GZSLIoUMetric')
test_evaluator = val_evaluator

model = dict(
    data_preprocessor=dict(size=(512, 512)),
    decode_head=dict(
        num_classes=150,
        gen_unseen_rate=9,  # illustrative (VOC's value)
        class_embeddings='data/embeddings/ade20k150_w2v_ft.npz'))
