"""Zero-shot datasets, unseen masking and label checks on a tiny on-disk
VOC-layout dataset."""
import os.path as osp

import numpy as np
import pytest
from mmseg.registry import DATASETS
from PIL import Image

from mmseg_sign.datasets import resolve_split
from mmseg_sign.datasets.class_names import CONTEXT33_CLASSES, VOC20_CLASSES
from mmseg_sign.datasets.context33 import context59_to_33_lut

# VOC label values (0 = background, 1..20 classes, 255 = border)
SHEEP, CAT, TRAIN = (
    VOC20_CLASSES.index(c) + 1 for c in ('sheep', 'cat', 'train'))
LABELS = {
    'with_unseen': np.array([[0, CAT, CAT, SHEEP], [255, CAT, TRAIN, 0]]),
    'seen_only': np.array([[CAT, CAT, 0, 0], [1, 1, 255, 0]]),
    'bad_value': np.array([[CAT, 21, 0, 0], [0, 0, 0, 0]]),
}


@pytest.fixture()
def voc_root(tmp_path):
    for sub in ('JPEGImages', 'SegmentationClass', 'ImageSets/Segmentation'):
        (tmp_path / sub).mkdir(parents=True)
    for name, label in LABELS.items():
        Image.fromarray(np.zeros(
            (2, 4, 3), np.uint8)).save(tmp_path / 'JPEGImages' / f'{name}.jpg')
        Image.fromarray(label.astype(np.uint8)).save(
            tmp_path / 'SegmentationClass' / f'{name}.png')
    (tmp_path /
     'ImageSets/Segmentation/good.txt').write_text('with_unseen\nseen_only\n')
    (tmp_path /
     'ImageSets/Segmentation/all.txt').write_text('\n'.join(LABELS) + '\n')
    return str(tmp_path)


def build_voc(root, split='good', mask=True, **kwargs):
    pipeline = [
        dict(type='LoadImageFromFile'),
        dict(type='LoadAnnotations'),
        dict(type='MaskUnseenClasses' if mask else 'CheckSegLabels'),
    ]
    return DATASETS.build(
        dict(
            type='ZeroShotPascalVOCDataset',
            data_root=root,
            data_prefix=dict(
                img_path='JPEGImages', seg_map_path='SegmentationClass'),
            ann_file=f'ImageSets/Segmentation/{split}.txt',
            pipeline=pipeline,
            **kwargs))


def expected_mask(label, unseen_names):
    """Reference: reduce_zero_label, then unseen -> 255, by explicit loop."""
    out = np.empty_like(label)
    for idx, value in np.ndenumerate(label):
        if value in (0, 255):
            out[idx] = 255
        elif VOC20_CLASSES[value - 1] in unseen_names:
            out[idx] = 255
        else:
            out[idx] = value - 1
    return out


def test_default_split_and_masking(voc_root):
    ds = build_voc(voc_root)
    assert ds.metainfo['unseen_classes'] == ('pottedplant', 'sheep', 'sofa',
                                             'train', 'tvmonitor')
    assert len(ds.metainfo['seen_classes']) == 15
    assert len(ds.metainfo['palette']) == 20
    assert len(ds) == 2
    for i, name in enumerate(['with_unseen', 'seen_only']):
        got = ds[i]['gt_seg_map']
        np.testing.assert_array_equal(
            got, expected_mask(LABELS[name], ds.metainfo['unseen_classes']))


def test_split_override_by_names_and_indices(voc_root):
    ds = build_voc(voc_root, metainfo=dict(unseen_classes=['cat', 'sheep']))
    assert ds.metainfo['unseen_classes'] == ('cat', 'sheep')
    assert 'train' in ds.metainfo['seen_classes']
    got = ds[0]['gt_seg_map']
    np.testing.assert_array_equal(
        got, expected_mask(LABELS['with_unseen'], ('cat', 'sheep')))
    ds = build_voc(voc_root, metainfo=dict(unseen_classes=[CAT - 1]))
    assert ds.metainfo['unseen_classes'] == ('cat', )


def test_drop_unseen_images(voc_root):
    ds = build_voc(voc_root, drop_unseen_images=True)
    assert [osp.basename(ds[i]['img_path']) for i in range(len(ds))] == \
        ['seen_only.jpg']


def test_training_dataset_masks_unseen_labels_itself(voc_root):
    """A deterministic pipeline without MaskUnseenClasses is taken for an
    evaluation pipeline (every label kept); a trainer that calls
    ``mask_unseen_labels()`` gets the transform inserted right after
    LoadAnnotations (before workers start), or, with ``insert=False``
    (workers already running), a clear error."""
    ds = build_voc(voc_root, mask=False)
    assert (ds[0]['gt_seg_map'] == SHEEP - 1).any()  # evaluation: kept
    with pytest.raises(
            ValueError,
            match=r"no MaskUnseenClasses and no "
            r"random transform.*'sheep'.*right after "
            'LoadAnnotations'):
        ds.mask_unseen_labels(insert=False)
    assert ds.mask_unseen_labels(insert=True)
    assert_masks_unseen(ds, [
        'LoadImageFromFile', 'CheckedLoadAnnotations', 'MaskUnseenClasses',
        'CheckSegLabels'
    ])
    assert not ds.mask_unseen_labels(insert=True)  # already there
    assert not ds.mask_unseen_labels(insert=False)
    assert not build_voc(voc_root).mask_unseen_labels()
    dropped = build_voc(voc_root, drop_unseen_images=True)
    assert not dropped.mask_unseen_labels(insert=False)


def assert_masks_unseen(ds, transforms):
    """The pipeline's transforms are ``transforms`` and the first sample's
    unseen pixels are ignored."""
    assert [type(t).__name__ for t in ds.pipeline.transforms] == transforms
    np.testing.assert_array_equal(
        ds[0]['gt_seg_map'],
        expected_mask(LABELS['with_unseen'], ds.metainfo['unseen_classes']))


def test_training_pipeline_recognised_at_build(voc_root):
    """A pipeline with random transforms trains: MaskUnseenClasses is
    inserted when the dataset is built (before any worker copies it)."""
    pipeline = [
        dict(type='LoadImageFromFile'),
        dict(type='LoadAnnotations'),
        dict(type='RandomFlip', prob=0.0)
    ]
    ds = DATASETS.build(
        dict(
            type='ZeroShotPascalVOCDataset',
            data_root=voc_root,
            data_prefix=dict(
                img_path='JPEGImages', seg_map_path='SegmentationClass'),
            ann_file='ImageSets/Segmentation/good.txt',
            pipeline=pipeline))
    assert_masks_unseen(ds, [
        'LoadImageFromFile', 'CheckedLoadAnnotations', 'MaskUnseenClasses',
        'RandomFlip'
    ])


@pytest.mark.parametrize('reduce_zero_label', [False, True])
@pytest.mark.parametrize('held_out', [False, True])
def test_checked_loader_matches_mmseg(tmp_path, reduce_zero_label, held_out):
    """CheckedLoadAnnotations gives exactly what mmseg's LoadAnnotations
    gives (reduce_zero_label, then label_map)."""
    from mmseg.datasets.transforms import LoadAnnotations

    from mmseg_sign.datasets.transforms.zero_shot import CheckedLoadAnnotations
    rng = np.random.default_rng(0)
    label = rng.integers(0, 12, size=(37, 53)).astype(np.uint8)
    label[:3] = 255
    path = str(tmp_path / 'label.png')
    Image.fromarray(label).save(path)
    label_map = {i: (255 if i == 4 else i - (i > 4)) for i in range(12)} \
        if held_out else None
    results = dict(
        seg_map_path=path,
        reduce_zero_label=reduce_zero_label,
        label_map=label_map)
    want = LoadAnnotations()(dict(results, seg_fields=[]))['gt_seg_map']
    got = CheckedLoadAnnotations()(dict(
        results,
        seg_fields=[],
        ori_shape=(37, 53),
        num_classes=12,
        ignore_index=255))['gt_seg_map']
    assert got.dtype == want.dtype == np.uint8
    np.testing.assert_array_equal(got, want)


def test_mask_unseen_classes_matches_a_loop():
    from mmseg_sign.datasets import MaskUnseenClasses
    rng = np.random.default_rng(1)
    seg = rng.integers(0, 8, size=(9, 11)).astype(np.uint8)
    seg[0, :4] = 255
    want = seg.copy()
    for idx, value in np.ndenumerate(seg):
        if value in (2, 5):
            want[idx] = 255
    got = MaskUnseenClasses()(dict(
        gt_seg_map=seg,
        num_classes=8,
        unseen_class_ids=[2, 5],
        ignore_index=255))['gt_seg_map']
    np.testing.assert_array_equal(got, want)


def test_bad_label_value_names_the_file(voc_root):
    ds = build_voc(voc_root, split='all', mask=False)
    ds[0], ds[1]  # valid files load
    with pytest.raises(ValueError, match=r'bad_value\.png.*\[20\]'):
        ds.pipeline(ds.get_data_info(2))


@pytest.mark.parametrize('seen, unseen, message',
                         [(None, ['zebra'], "unknown class name 'zebra'"),
                          (['cat'], ['cat', 'dog'], 'both seen and unseen'),
                          (None, list(VOC20_CLASSES), 'seen set is empty'),
                          (['cat'], ['dog'], 'neither seen nor unseen'),
                          (None, [25], 'out of range'),
                          (None, ['cat', 'cat'], 'listed twice')])
def test_split_errors(seen, unseen, message):
    with pytest.raises(ValueError, match=message):
        resolve_split(VOC20_CLASSES, seen, unseen)


def test_split_errors_at_build_time(voc_root):
    with pytest.raises(ValueError, match="unknown class name 'zebra'"):
        build_voc(voc_root, metainfo=dict(unseen_classes=['zebra']))


def test_all_datasets_registered_with_their_protocols():
    from mmseg_sign.datasets import (ZeroShotCOCOStuffDataset,
                                     ZeroShotPascalContext59Dataset,
                                     ZeroShotPascalContextDataset)
    for cls, n, n_unseen in [(ZeroShotPascalContextDataset, 33, 4),
                             (ZeroShotPascalContext59Dataset, 59, 10),
                             (ZeroShotCOCOStuffDataset, 171, 15)]:
        meta = cls._load_metainfo()
        assert len(meta['classes']) == n == len(meta['palette'])
        assert len(meta['unseen_classes']) == n_unseen
        assert DATASETS.get(cls.__name__) is cls
    coco = ZeroShotCOCOStuffDataset._load_metainfo()
    ids = sorted(coco['classes'].index(c) for c in coco['unseen_classes'])
    assert ids == [
        19, 23, 28, 29, 36, 51, 76, 88, 94, 112, 133, 136, 137, 157, 160
    ]


def test_context33_lut_matches_names():
    from mmseg.datasets import PascalContextDataset59
    classes59 = PascalContextDataset59.METAINFO['classes']
    lut = context59_to_33_lut()
    assert lut[0] == 255 and lut[255] == 255
    for value59 in range(1, 60):
        name = classes59[value59 - 1]
        name = 'diningtable' if name == 'table' else name  # 33-class name
        want = CONTEXT33_CLASSES.index(name) \
            if name in CONTEXT33_CLASSES else 255
        assert lut[value59] == want, name
    assert (lut[1:60] != 255).sum() == 33


def test_image_size_falls_back_only_for_unreadable_images(tmp_path):
    """The label / image size check reads the image header with PIL; an
    image PIL cannot read (missing, not an image) gives ``None`` (the
    check is skipped and LoadImageFromFile reports it), anything else
    raises."""
    from types import SimpleNamespace

    import numpy as np
    from PIL import Image

    from mmseg_sign.datasets.pipeline_checks import _image_size
    good = tmp_path / 'a.png'
    Image.fromarray(np.zeros((5, 7, 3), np.uint8)).save(good)
    dataset = SimpleNamespace(backend_args=None)
    assert _image_size(dict(img_path=str(good)), dataset) == (5, 7)
    junk = tmp_path / 'b.png'
    junk.write_bytes(b'not an image')
    assert _image_size(dict(img_path=str(junk)), dataset) is None
    assert _image_size(dict(img_path=str(tmp_path / 'none.png')),
                       dataset) is None
    assert _image_size(dict(), dataset) is None
    with pytest.raises(TypeError):
        _image_size(
            dict(img_path=str(good)),
            SimpleNamespace(backend_args='not a dict'))


def test_a_misspelled_metainfo_key_is_an_error(voc_root):
    """``metainfo=dict(unseen_class=[...])`` was kept and never
    read, so the default split trained without a word."""
    with pytest.raises(
            ValueError,
            match=r"ZeroShotPascalVOCDataset: "
            r"unknown metainfo keys \['unseen_class'\]; a "
            r"zero-shot dataset reads \['classes', 'palette'"):
        build_voc(voc_root, metainfo=dict(unseen_class=['sofa']))
    ds = build_voc(voc_root, metainfo=dict(unseen_classes=['sofa']))
    assert tuple(ds.metainfo['unseen_classes']) == ('sofa', )
    # a built dataset's own metainfo is accepted back (as tools pass it on)
    again = build_voc(voc_root, metainfo=ds.metainfo)
    assert again.metainfo['unseen_classes'] == ds.metainfo['unseen_classes']
