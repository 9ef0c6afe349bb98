"""Any mmseg dataset made zero-shot: the generic ``ZeroShotDataset`` (on a
tiny ADE20K-layout dataset written on the fly) and configs/sign/
sign_ade20k.py run end to end through tools/train.py."""
import os.path as osp
import pickle

import mmcv
import numpy as np
import pytest
from e2e_utils import REPO, run_tool, write_config

UNSEEN = [
    'bed', 'plant', 'mirror', 'bathtub', 'sink', 'pillow', 'book', 'bar',
    'streetlight', 'ottoman', 'washer', 'cradle', 'bicycle', 'tray', 'glass'
]  # as configs/sign/sign_ade20k.py
UNSEEN_IDS = list(range(7, 150, 10))


def ade_classes():
    from mmseg.datasets import ADE20KDataset
    return ADE20KDataset.METAINFO['classes']


def _write_split(root, split, num, rng, unseen_in):
    """ADE20K layout: images/<split>/*.jpg, annotations/<split>/*.png with
    0 = other (ignored by reduce_zero_label) and 1..150 = classes."""
    seen_values = [i + 1 for i in range(150) if i not in UNSEEN_IDS]
    for k in range(num):
        img = rng.integers(0, 255, size=(48, 64, 3), dtype=np.uint8)
        seg = np.zeros((48, 64), np.uint8)
        for y in range(0, 48, 16):
            for x in range(0, 64, 16):
                seg[y:y + 16, x:x + 16] = rng.choice(seen_values)
        seg[:4] = 0
        if k in unseen_in:
            seg[20:36, 20:36] = UNSEEN_IDS[0] + 1  # 'bed '
        name = f'ADE_{split}_{k:08d}'
        mmcv.imwrite(img, osp.join(root, 'images', split, name + '.jpg'))
        mmcv.imwrite(seg, osp.join(root, 'annotations', split, name + '.png'))


@pytest.fixture(scope='module')
def ade_root(tmp_path_factory):
    """4 training images (0 and 2 hold the unseen class 'bed '), 2
    validation images (0 holds it)."""
    root = tmp_path_factory.mktemp('ade')
    rng = np.random.default_rng(0)
    _write_split(str(root), 'training', 4, rng, unseen_in={0, 2})
    _write_split(str(root), 'validation', 2, rng, unseen_in={0})
    return str(root)


def build(ade_root, split='training', **kwargs):
    from mmseg.registry import DATASETS
    cfg = dict(
        type='ZeroShotDataset',
        dataset_type='ADE20KDataset',
        data_root=ade_root,
        data_prefix=dict(
            img_path=f'images/{split}', seg_map_path=f'annotations/{split}'),
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations'),
            dict(type='PackSegInputs')
        ],
        unseen_classes=UNSEEN)
    cfg.update(kwargs)
    return DATASETS.build(cfg)


# ------------------------------------------------------------------ unit
def test_wrapper_metainfo_and_split(ade_root):
    from mmseg.datasets import ADE20KDataset
    ds = build(ade_root)
    assert isinstance(ds, ADE20KDataset)
    assert type(ds).__name__ == 'ZeroShotADE20KDataset'
    classes = ade_classes()
    meta = ds.metainfo
    assert tuple(meta['classes']) == tuple(classes)
    assert len(meta['palette']) == 150
    # 'bed' resolves to mmseg's spelling 'bed '
    assert meta['unseen_classes'][0] == 'bed '
    assert len(meta['unseen_classes']) == 15
    assert len(meta['seen_classes']) == 135
    assert ds.unseen_class_ids == UNSEEN_IDS
    assert len(ds) == 4
    # the nested form gives the same dataset
    nested = build(
        ade_root,
        dataset_type=None,
        dataset=dict(
            type='ADE20KDataset',
            data_root=ade_root,
            data_prefix=dict(
                img_path='images/training',
                seg_map_path='annotations/training')))
    assert nested.metainfo['unseen_classes'] == meta['unseen_classes']
    # the split may also be given in metainfo, and by index
    by_index = build(
        ade_root,
        unseen_classes=None,
        metainfo=dict(unseen_classes=UNSEEN_IDS))
    assert by_index.metainfo['unseen_classes'] == meta['unseen_classes']


def test_metainfo_from_cfg_reads_no_file():
    from mmengine.config import Config

    from mmseg_sign.datasets import zero_shot_metainfo_from_cfg
    cfg = Config.fromfile(osp.join(REPO, 'configs/sign/sign_ade20k.py'))
    meta = zero_shot_metainfo_from_cfg(cfg.test_dataloader.dataset)
    assert len(meta['unseen_classes']) == 15
    assert meta['unseen_classes'][0] == 'bed '


def test_wrapper_errors(ade_root):
    with pytest.raises(ValueError, match='needs `unseen_classes`'):
        build(ade_root, unseen_classes=None)
    with pytest.raises(ValueError, match="unknown class name 'bedd'"):
        build(ade_root, unseen_classes=['bedd'])
    with pytest.raises(ValueError, match='given twice'):
        build(ade_root, metainfo=dict(unseen_classes=['plant']))
    with pytest.raises(ValueError, match='exactly one of'):
        build(ade_root, dataset_type=None)
    with pytest.raises(KeyError, match='NoSuchDataset'):
        build(ade_root, dataset_type='NoSuchDataset')


def test_stripped_names():
    from mmseg_sign.datasets import resolve_split
    classes = ('wall', 'bed ', 'sky')
    assert resolve_split(classes, unseen=['bed'])[1] == ('bed ', )
    assert resolve_split(classes, unseen=['bed '])[1] == ('bed ', )
    assert resolve_split(classes, unseen=[' sky'])[1] == ('sky', )
    with pytest.raises(ValueError, match='ambiguous'):
        resolve_split(('bed', 'bed '), unseen=['bed  '])


def test_head_set_class_split_strips(tmp_path):
    from mmseg_sign.embeddings import save_class_embeddings
    from mmseg_sign.models.decode_heads import SIGNHead
    names = ['wall', 'bed', 'sky']  # a table built from a class file
    path = str(tmp_path / 'emb.npz')
    save_class_embeddings(path, names, np.eye(3, 8, dtype=np.float32))
    head = SIGNHead(
        in_channels=8,
        channels=8,
        num_classes=3,
        class_embeddings=path,
        latent_channels=8,
        generator_hidden=(8, ),
        generator_dropout=0.1,
        discriminator_hidden=(8, ))
    head.set_class_split(['bed '], ('wall', 'bed ', 'sky'))
    assert head.unseen_mask.tolist() == [False, True, False]
    with pytest.raises(ValueError, match='differ from the class-embedding'):
        head.set_class_split(['bed'], ('wall', 'bad', 'sky'))


def test_injected_info_keys_and_serialisation(ade_root):
    ds = build(ade_root)
    info = ds.get_data_info(0)
    assert info['num_classes'] == 150
    assert info['unseen_class_ids'] == UNSEEN_IDS
    assert info['ignore_index'] == 255
    # lazy_init: keys injected when the inner dataset loads its list
    lazy = build(ade_root, lazy_init=True)
    assert not lazy._fully_initialized
    lazy.full_init()
    assert lazy.get_data_info(1)['unseen_class_ids'] == UNSEEN_IDS
    # picklable (spawned dataloader workers)
    again = pickle.loads(pickle.dumps(ds))
    assert type(again) is type(ds) and len(again) == 4
    # the project's transforms need no arguments
    ds2 = build(
        ade_root,
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations'),
            dict(type='MaskUnseenClasses'),
            dict(type='CheckSegLabels'),
            dict(type='PackSegInputs')
        ])
    seg = ds2[0]['data_samples'].gt_sem_seg.data.numpy()
    assert not np.isin(seg, UNSEEN_IDS).any() and (seg == 255).any()


TRAIN_PIPELINE = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations'),
    dict(type='MaskUnseenClasses'),
    dict(type='PackSegInputs')
]


def test_drop_unseen_images(ade_root):
    ds = build(ade_root, drop_unseen_images=True, pipeline=TRAIN_PIPELINE)
    assert len(ds) == 2  # images 0 and 2 hold 'bed '
    assert all(
        not osp.basename(ds.get_data_info(i)['img_path']).endswith(('0.jpg',
                                                                    '2.jpg'))
        for i in range(len(ds)))
    # an evaluation dataset would lose images: refused
    with pytest.raises(
            ValueError,
            match='drop_unseen_images=True on a '
            'dataset that evaluates'):
        build(ade_root, drop_unseen_images=True, test_mode=True)


def test_mask_unseen_labels(ade_root):
    from mmseg.datasets.transforms import LoadAnnotations

    from mmseg_sign.datasets import MaskUnseenClasses
    ds = build(ade_root)
    seg = ds[0]['data_samples'].gt_sem_seg.data.numpy()
    assert np.isin(seg, UNSEEN_IDS).any()  # leaks without the transform
    with pytest.raises(ValueError, match='no MaskUnseenClasses'):
        ds.mask_unseen_labels()  # workers may hold the pipeline: error
    assert ds.mask_unseen_labels(insert=True) is True
    transforms = ds.pipeline.transforms
    load = next(i for i, t in enumerate(transforms)
                if isinstance(t, LoadAnnotations))
    assert isinstance(transforms[load + 1], MaskUnseenClasses)
    seg = ds[0]['data_samples'].gt_sem_seg.data.numpy()
    assert not np.isin(seg, UNSEEN_IDS).any()
    assert ds.mask_unseen_labels() is False  # already there
    assert build(
        ade_root, drop_unseen_images=True,
        pipeline=TRAIN_PIPELINE).mask_unseen_labels() is False


def test_already_zero_shot_dataset_passes_through(toy_root):
    """A project zero-shot dataset wrapped again keeps its class and takes
    the split from the wrapper's arguments."""
    from mmseg.registry import DATASETS

    from mmseg_sign.datasets import ZeroShotToyDataset
    ds = DATASETS.build(
        dict(
            type='ZeroShotDataset',
            dataset_type='ZeroShotToyDataset',
            data_root=toy_root,
            data_prefix=dict(
                img_path='JPEGImages', seg_map_path='SegmentationClass'),
            ann_file='ImageSets/Segmentation/val.txt',
            pipeline=[],
            unseen_classes=[0]))
    assert type(ds) is ZeroShotToyDataset
    assert ds.metainfo['unseen_classes'] == (ds.metainfo['classes'][0], )


# -------------------------------------------------------------------- e2e
TINY_ADE = """
data_root = {root!r}
crop = (32, 32)
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='MaskUnseenClasses'),
    dict(type='RandomCrop', crop_size=crop),
    dict(type='PackSegInputs'),
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', reduce_zero_label=True),
    dict(type='CheckSegLabels'),
    dict(type='PackSegInputs'),
]
train_dataloader = dict(batch_size=2, dataset=dict(
    data_root=data_root, pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(data_root=data_root,
                                   pipeline=test_pipeline))
test_dataloader = val_dataloader
feat = 16
model = dict(
    pretrained=None,
    data_preprocessor=dict(size=crop),
    backbone=dict(depth=18, base_channels=8, stem_channels=8,
                  norm_cfg=dict(type='BN', requires_grad=True),
                  norm_eval=False),
    neck=dict(in_channels=64, channels=feat, dilations=(1, 2, 3, 4),
              pe_channels=feat, num_heads=2, latent_channels=feat,
              latent_hidden=feat, latent_dilations=(1, )),
    decode_head=dict(in_channels=feat, channels=feat, latent_channels=feat,
                     generator_hidden=(32, ), generator_dropout=0.1,
                     trunk_channels=32, mmd_max_pixels=32,
                     class_embeddings={emb!r}),
    train_cfg=dict(ce_scales=(1.0, )))
stages = [dict(name='train', iters=2),
          dict(name='transfer', iters=2, mode='alternate', block_iters=1),
          dict(name='self_train', iters=2, mode='AST', temperature=2.0)]
param_scheduler = dict(
    _delete_=True,
    segmentor=[dict(type='PolyLR', power=0.9, eta_min=1e-4, begin=0,
                    end=2, by_epoch=False)],
    generator=[], discriminator=[], transfer=[], transfer_generator=[],
    self_train=[], self_train_generator=[], self_train_discriminator=[])
train_cfg = dict(stages=stages, val_interval=100)
default_hooks = dict(checkpoint=dict(interval=100),
                     logger=dict(interval=1),
                     visualization=dict(type='SegVisualizationHook'))
"""


@pytest.mark.slow
def test_sign_ade20k_config_trains_every_stage(ade_root, tmp_path):
    from mmseg_sign.embeddings import save_class_embeddings
    ws = tmp_path
    names = [c.strip() for c in ade_classes()]  # as from a class file
    vectors = np.random.default_rng(0).normal(size=(150, 12))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    emb = save_class_embeddings(str(ws / 'ade150.npz'), names, vectors)
    cfg = write_config(ws / 'ade.py', 'configs/sign/sign_ade20k.py',
                       TINY_ADE.format(root=ade_root, emb=emb))
    wd = str(ws / 'wd')
    out = run_tool(['train.py', cfg, '--work-dir', wd], str(ws))
    assert osp.exists(osp.join(wd, 'iter_6.pth')), out[-3000:]
    assert "SIGN stage 'train' (1/3): iterations 1-2" in out
    assert "SIGN stage 'transfer' (2/3): iterations 3-4" in out
    assert "SIGN stage 'self_train' (3/3): iterations 5-6" in out
    assert 'loss_mmd' in out and 'st_pixels' in out
    assert 'mIoU_unseen' in out and 'hIoU' in out
