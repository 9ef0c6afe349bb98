"""Bad inputs a user can give the zero-shot datasets (the data side),
as a table. Each case says what the user does and what must happen: a
clear error (a regex of its message, which names the file or key and the
fix) or correct behaviour (checked against the raw label files). Every case
runs on a fresh copy of the small toy data with the shipped toy configs
changed as ``--cfg-options`` would, and with the shipped dataloaders (two
persistent worker processes) where the case is about what the workers do.
The run / checkpoint / tool cases of the issue are in
``test_bad_inputs_run.py``."""
import copy
import os
import os.path as osp
import re
import shutil
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pytest
from e2e_utils import REPO, run_tool, write_config
from mmengine.config import Config
from mmengine.runner import Runner
from mmseg.registry import DATASETS
from PIL import Image

from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN

SIGN = 'configs/sign/sign_toy.py'
FCN = 'configs/baselines/fcn_r18-tiny_toy.py'
UNSEEN_IDS = [TOY_CLASSES.index(c) for c in TOY_UNSEEN]


class Workspace:
    """A fresh copy of the toy data and the shipped configs pointed at it."""

    def __init__(self, path, toy_root):
        self.path = path
        self.root = str(path / 'data' / 'toy')
        shutil.copytree(toy_root, self.root)

    def config(self, config=SIGN, **options) -> Config:
        """The shipped ``config`` with ``options`` merged as
        ``--cfg-options`` merges them."""
        cfg = Config.fromfile(osp.join(REPO, config))
        cfg.merge_from_dict({
            f'{split}_dataloader.dataset.data_root': self.root
            for split in ('train', 'val', 'test')
        })
        cfg.merge_from_dict(options)
        return cfg

    def dataset(self, split='train', config=SIGN, **options):
        return DATASETS.build(
            copy.deepcopy(
                self.config(config, **options)[f'{split}_dataloader'].dataset))

    def read_all(self, split='train', config=SIGN, **options):
        """Every sample of ``split`` once, through the config's own
        dataloader (shipped: 2 persistent worker processes); returns the
        label maps the model would get."""
        cfg = self.config(config, **options)[f'{split}_dataloader']
        loader = Runner.build_dataloader(copy.deepcopy(cfg), seed=0)
        assert loader.num_workers == 2 and loader.persistent_workers
        n = len(loader.dataset)
        labels, it = [], iter(loader)
        try:
            while len(labels) < n:
                batch = next(it)
                labels += [
                    s.gt_sem_seg.data.numpy() for s in batch['data_samples']
                ]
        finally:
            it._shutdown_workers()
        return labels[:n]

    def label_path(self, index, split='train'):
        """The label file of sample ``index`` (the split file's order)."""
        names = open(
            osp.join(self.root, 'ImageSets', 'Segmentation',
                     f'{split}.txt')).read().split()
        return osp.join(self.root, 'SegmentationClass', f'{names[index]}.png')

    def raw_label(self, index, split='train'):
        return np.array(Image.open(self.label_path(index, split)))

    def write_label(self, index, array, split='train'):
        Image.fromarray(array).save(self.label_path(index, split))
        return self.label_path(index, split)


def pipeline_without_mask(ws, config=SIGN):
    return [
        t for t in ws.config(config).train_pipeline
        if t['type'] != 'MaskUnseenClasses'
    ]


def deterministic_pipeline():
    return [
        dict(type='LoadImageFromFile'),
        dict(type='LoadAnnotations'),
        dict(type='PackSegInputs')
    ]


def raw_unseen_pixels(ws, split='train'):
    """Unseen-class pixels in the raw label files (read with PIL)."""
    n = len(
        open(osp.join(ws.root, 'ImageSets', 'Segmentation',
                      f'{split}.txt')).read().split())
    return sum(
        int(np.isin(ws.raw_label(i, split), UNSEEN_IDS).sum())
        for i in range(n))


# ------------------------------------------------------------------ actions
def fcn_train_without_mask(ws):
    pipeline = pipeline_without_mask(ws, FCN)
    return ws.read_all('train', FCN,
                       **{'train_dataloader.dataset.pipeline': pipeline})


def no_unseen_label_reaches_training(ws, labels):
    assert raw_unseen_pixels(ws) > 0  # the files do hold unseen classes
    assert len(labels) == 24
    for label in labels:
        assert not np.isin(label, UNSEEN_IDS).any()
    assert sum(int((label == 255).sum()) for label in labels) > 0


def mask_moved(position):

    def act(ws):
        pipeline = pipeline_without_mask(ws, FCN)
        pipeline.insert(position if position >= 0 else len(pipeline),
                        dict(type='MaskUnseenClasses'))
        return ws.dataset('train', FCN,
                          **{'train_dataloader.dataset.pipeline': pipeline})

    return act


def sign_train_without_mask_real_run(ws):
    """tools/train.py, the shipped SIGN toy config and loaders, no mask,
    a 2-iteration train stage (data/toy and the class-embedding table are
    found from the working directory, as in a user's checkout)."""
    cfg = write_config(
        ws.path / 'no_mask.py', SIGN, f'train_dataloader = dict(dataset=dict('
        f'pipeline={pipeline_without_mask(ws)!r}))\n'
        "train_cfg = dict(stages=[dict(name='train', iters=2)], "
        'val_interval=100)\n')
    return run_tool(['train.py', cfg, '--work-dir',
                     str(ws.path / 'wd')], ws.path)


def inserted_before_workers_and_trained(ws, out):
    # the dataset inserted the mask when it was built, before the worker
    # processes copied it, and SIGN's train_step (which refuses a batch
    # with an unseen label) trained both iterations
    assert 'inserted it after LoadAnnotations' in out
    assert osp.exists(ws.path / 'wd' / 'iter_2.pth')


def deterministic_train_pipeline(config):
    """tools/train.py with a train pipeline of no random transform."""

    def act(ws):
        cfg = write_config(
            ws.path / 'det.py', config,
            f'train_dataloader = dict(dataset=dict('
            f'pipeline={deterministic_pipeline()!r}))\n')
        return run_tool(['train.py', cfg, '--work-dir',
                         str(ws.path / 'wd')], ws.path)

    return act


def val_option(**dataset_options):

    def act(ws):
        return ws.dataset(
            'val', SIGN, **{
                f'val_dataloader.dataset.{k}': v
                for k, v in dataset_options.items()
            })

    return act


def drop_on_mmseg_style_val(ws):
    """A shared ``zero_shot`` dict with drop_unseen_images reaching a val
    set whose pipeline is mmseg's (no CheckSegLabels, test_mode=False)."""
    return ws.dataset(
        'val', SIGN, **{
            'val_dataloader.dataset.drop_unseen_images':
            True,
            'val_dataloader.dataset.pipeline': [
                dict(type='LoadImageFromFile'),
                dict(type='Resize', scale=(64, 64), keep_ratio=True),
                dict(type='LoadAnnotations'),
                dict(type='PackSegInputs')
            ]
        })


def drop_on_train(ws):
    return ws.dataset('train', SIGN,
                      **{'train_dataloader.dataset.drop_unseen_images': True})


def train_images_without_unseen(ws, dataset):
    names = open(osp.join(ws.root, 'ImageSets', 'Segmentation',
                          'train.txt')).read().split()
    want = [
        n for i, n in enumerate(names)
        if not np.isin(ws.raw_label(i), UNSEEN_IDS).any()
    ]
    got = [
        osp.basename(dataset.get_data_info(i)['seg_map_path'])[:-4]
        for i in range(len(dataset))
    ]
    assert 0 < len(got) < len(names) and got == want


def corrupt(index, how, split='train', read=True):
    """Spoil the label file of sample ``index`` of ``split``, then read
    every sample of the split through its dataloader (workers)."""

    def act(ws):
        path = ws.label_path(index, split)
        label = ws.raw_label(index, split)
        if how == '16bit':
            label = label.astype(np.uint16)
            label[0, 0] = 258  # uint8 would wrap it to class 2
            Image.fromarray(label).save(path)
        elif how == 'truncated':
            data = open(path, 'rb').read()
            open(path, 'wb').write(data[:len(data) // 2])
        elif how == 'text':
            open(path, 'w').write('not an image\n')
        elif how == 'small':
            Image.fromarray(label[:32, :32]).save(path)
        elif how == '1x1':  # a 1×1 image and label
            Image.fromarray(label[:1, :1]).save(path)
            Image.fromarray(np.zeros((1, 1, 3), np.uint8)).save(
                path.replace('SegmentationClass', 'JPEGImages'))
        elif how == 'rgb':
            Image.fromarray(np.stack([label] * 3, -1)).save(path)
        elif how == 'value':
            label[1, 1] = 12  # 10 classes: 12 is neither a class nor 255
            Image.fromarray(label).save(path)
        elif how == '1-based':
            label = np.where(label == 255, 255, label + 1).astype(np.uint8)
            label[0, 0] = 10  # the shifted last class is there
            Image.fromarray(label).save(path)
        if not read:
            return ws.dataset(split)
        return ws.read_all(split)

    return act


def empty_split(ws):
    open(osp.join(ws.root, 'ImageSets', 'Segmentation', 'train.txt'),
         'w').close()
    return ws.dataset('train')


def data_root_missing(ws):
    return ws.dataset(
        'train',
        **{'train_dataloader.dataset.data_root': osp.join(ws.root, 'nowhere')})


def split_file_and_labels_missing(ws):
    os.remove(osp.join(ws.root, 'ImageSets', 'Segmentation', 'train.txt'))
    shutil.rmtree(osp.join(ws.root, 'SegmentationClass'))
    return ws.dataset('train')


def held_out_string(ws):
    return ws.dataset('train',
                      **{'train_dataloader.dataset.held_out_classes': 'river'})


def river_held_out(ws, dataset):
    classes = dataset.metainfo['classes']
    assert len(classes) == len(TOY_CLASSES) - 1 and 'river' not in classes
    assert dataset.metainfo['held_out_classes'] == ('river', )
    assert dataset.metainfo['unseen_classes'] == ('flag', 'hedge')


def held_out_and_unseen(ws):
    return ws.dataset(
        'train', **{
            'train_dataloader.dataset.held_out_classes': ['river'],
            'train_dataloader.dataset.metainfo':
            dict(unseen_classes=['flag', 'river'])
        })


@dataclass(frozen=True)
class Case:
    name: str
    does: str  # what the user does
    act: Callable  # act(workspace) -> result
    error: Optional[str] = None  # regex of the expected error ...
    check: Optional[Callable] = None  # ... or check(workspace, result)
    label: Optional[tuple] = None  # (index, split): error names this file
    slow: bool = False  # trains through tools/train.py or real workers


CASES = [
    # ----------------------------------------- silently wrong 1 and 2
    Case(
        'fcn_train_pipeline_without_mask',
        'plain mmseg FCN (baseline config), train_pipeline without '
        'MaskUnseenClasses, shipped loaders (2 workers)',
        fcn_train_without_mask,
        check=no_unseen_label_reaches_training),
    Case(
        'mask_after_pack_seg_inputs',
        'MaskUnseenClasses placed after PackSegInputs',
        mask_moved(-1),
        error=r'MaskUnseenClasses at position 5 of the pipeline .* does '
        r'nothing there .* Put it right after LoadAnnotations'),
    Case(
        'mask_before_load_annotations',
        'MaskUnseenClasses placed before LoadAnnotations',
        mask_moved(0),
        error=r'MaskUnseenClasses at position 0 .* does nothing there'),
    Case(
        'sign_without_mask_shipped_workers',
        'SIGN toy config without MaskUnseenClasses, shipped num_workers=2 '
        '(tools/train.py)',
        sign_train_without_mask_real_run,
        check=inserted_before_workers_and_trained,
        slow=True),
    Case(
        'sign_deterministic_train_pipeline',
        'SIGN with a train pipeline of no random transform and no mask '
        '(taken for an evaluation pipeline)',
        deterministic_train_pipeline(SIGN),
        error=r'no MaskUnseenClasses and no random transform.*'
        r"\('flag', 'hedge', 'river'\).*right after LoadAnnotations",
        slow=True),
    Case(
        'fcn_deterministic_train_pipeline',
        'a plain FCN with a train pipeline of no random transform and no '
        'mask',
        deterministic_train_pipeline(FCN),
        error=r'no MaskUnseenClasses and no random transform.*'
        r"\('flag', 'hedge', 'river'\).*right after LoadAnnotations",
        slow=True),
    # ----------------------------------------------- silently wrong 6
    Case(
        'drop_unseen_images_on_val',
        'drop_unseen_images=True on the val set (CheckSegLabels pipeline)',
        val_option(drop_unseen_images=True),
        error=r'drop_unseen_images=True on a dataset that evaluates .*'
        r'Set drop_unseen_images on the training dataset only'),
    Case(
        'drop_unseen_images_on_mmseg_style_val',
        'a shared zero_shot dict with drop_unseen_images=True reaching a '
        "val set with mmseg's pipeline (test_mode=False)",
        drop_on_mmseg_style_val,
        error=r'drop_unseen_images=True on a dataset that evaluates'),
    Case(
        'drop_unseen_images_test_mode',
        'drop_unseen_images=True with test_mode=True',
        val_option(drop_unseen_images=True, test_mode=True),
        error=r'drop_unseen_images=True on a dataset that evaluates '
        r'\(test_mode=True\)'),
    Case(
        'drop_unseen_images_on_train',
        'drop_unseen_images=True on the training set (ZS3 protocol)',
        drop_on_train,
        check=train_images_without_unseen),
    Case(
        'mask_in_test_mode',
        'MaskUnseenClasses in a test_mode dataset',
        val_option(
            test_mode=True,
            pipeline=[
                dict(type='LoadImageFromFile'),
                dict(type='LoadAnnotations'),
                dict(type='MaskUnseenClasses'),
                dict(type='PackSegInputs')
            ]),
        error=r'test_mode=True, but its pipeline has MaskUnseenClasses'),
    # ----------------------------------------------- silently wrong 7
    Case(
        '16_bit_label_in_validation',
        'a 16-bit label with a value >= 256 in validation sample 3',
        corrupt(3, '16bit', 'val'),
        label=(3, 'val'),
        error=r'a uint16 label map with values up to 258.*wrap to other '
        'classes'),
    Case(
        '16_bit_label_in_training_sample_5',
        'a 16-bit label with a value >= 256 in training sample 5',
        corrupt(5, '16bit'),
        label=(5, 'train'),
        error=r'label map with values up to 258.*8-bit class indices'),
    # ----------------------------------------------- silently wrong 8
    Case(
        'reduce_zero_label_on_0_based_maps',
        'reduce_zero_label=True on the toy (0-based) label maps',
        lambda ws: ws.dataset(
            'train', **{'train_dataloader.dataset.reduce_zero_label': True}),
        error=r"reduce_zero_label=True, but its label maps are 0-based "
        rf"\(0 = '{TOY_CLASSES[0]}'.*class '{TOY_CLASSES[0]}' would be "
        'ignored.*Remove reduce_zero_label'),
    Case(
        'reduce_zero_label_in_load_annotations_only',
        'LoadAnnotations(reduce_zero_label=True) in the pipeline only',
        lambda ws: ws.dataset(
            'val', **{
                'val_dataloader.dataset.pipeline': [
                    dict(type='LoadImageFromFile'),
                    dict(type='LoadAnnotations', reduce_zero_label=True),
                    dict(type='PackSegInputs')
                ]
            }),
        error=r'LoadAnnotations\(reduce_zero_label=True\) in the pipeline,'
        r' but the dataset has reduce_zero_label=False; set it on the '
        'dataset only'),
    Case(
        'one_based_maps_without_reduce_zero_label',
        'label maps written 1-based (0 = background) without '
        'reduce_zero_label',
        corrupt(0, '1-based', read=False),
        label=(0, 'train'),
        error=r'label values \[10\] .*look 1-based.*set '
        'reduce_zero_label=True'),
    # -------------------------------------------------------- obscure
    Case(
        'truncated_label_file',
        'training label 5 truncated',
        corrupt(5, 'truncated'),
        label=(5, 'train'),
        error=r'cannot decode the label map \(OSError: image file is '
        r'truncated.*Re-create it'),
    Case(
        'label_file_not_an_image',
        'training label 5 is a text file',
        corrupt(5, 'text'),
        label=(5, 'train'),
        error=r'cannot decode the label map \(UnidentifiedImageError.*'
        'not an image'),
    Case(
        'label_of_another_size_in_training',
        'training label 5 is 32x32, its image 64x64',
        corrupt(5, 'small'),
        label=(5, 'train'),
        error=r'the label map is 32×32 but its image is 64×64'),
    Case(
        'one_pixel_image_in_training', 'training image 5 (and its label) '
        'is 1×1',
        corrupt(5, '1x1'),
        label=(5, 'train'),
        error=r'the image is 1×1, too small to segment .*Remove it'),
    Case(
        'label_of_another_size_in_validation',
        'validation label 2 is 32x32, its image 64x64',
        corrupt(2, 'small', 'val'),
        label=(2, 'val'),
        error=r'the label map is 32×32 but its image is 64×64'),
    Case(
        'rgb_label',
        'training label 5 saved as an RGB image',
        corrupt(5, 'rgb'),
        label=(5, 'train'),
        error=r'the label map is 64×64×3, an RGB image .*one class index '
        'per pixel'),
    Case(
        'empty_split_file',
        'an empty ImageSets/Segmentation/train.txt',
        empty_split,
        error=r"the dataset is empty: the split file '.*train\.txt' lists "
        'no sample'),
    Case(
        'data_root_missing',
        "a data_root that does not exist (e.g. the toy data not made yet)",
        data_root_missing,
        error=r"ZeroShotToyDataset: data_root '.*nowhere' does not exist\. "
        r'Make it with `python tools/make_toy_dataset.py`.* Or point the '
        r'config at your copy: --cfg-options train_dataloader\.dataset\.'
        'data_root=DIR'),
    Case(
        'split_file_and_label_folder_missing',
        'the split file train.txt and the SegmentationClass folder removed',
        split_file_and_labels_missing,
        error=r'the split file .*train\.txt and the seg_map_path folder '
        r'.*SegmentationClass do not exist \(data_root='),
    Case(
        'out_of_range_label_in_validation_sample_0',
        'validation label 0 holds 12 (10 classes): found when the val '
        'dataset is built, before training',
        corrupt(0, 'value', 'val', read=False),
        label=(0, 'val'),
        error=r'label values \[12\] are neither a class index \(0\.\.9\) '
        'nor the ignore value 255'),
    Case(
        'out_of_range_label_in_validation_sample_3',
        'validation label 3 holds 12: found when it is read',
        corrupt(3, 'value', 'val'),
        label=(3, 'val'),
        error=r'label values \[12\] are neither a class index'),
    Case(
        'held_out_classes_one_string',
        "held_out_classes='river' (a string, not a list)",
        held_out_string,
        check=river_held_out),
    Case(
        'class_held_out_and_unseen',
        "held_out_classes=['river'] and unseen_classes=['flag', 'river']",
        held_out_and_unseen,
        error=r"\['river'\] are held out \(held_out_classes\) and also "
        r'listed in unseen_classes; a held-out class is neither seen nor '
        'unseen'),
]


@pytest.fixture()
def ws(tmp_path, toy_root):
    return Workspace(tmp_path, toy_root)


def test_case_names_are_unique():
    assert len({c.name for c in CASES}) == len(CASES)
    assert all((c.error is None) != (c.check is None) for c in CASES)


@pytest.mark.parametrize('case', [
    pytest.param(c, id=c.name, marks=pytest.mark.slow if c.slow else ())
    for c in CASES
])
def test_bad_input(case, ws):
    if case.check is not None:
        case.check(ws, case.act(ws))
        return
    error = case.error
    if case.label is not None:  # the message names the file first
        error = (re.escape(ws.label_path(*case.label)) + r'.*' + error)
    with pytest.raises((ValueError, AssertionError, FileNotFoundError),
                       match=error) as info:
        case.act(ws)
    if info.type is AssertionError:  # a tool run: its output
        assert 'Traceback' in str(info.value)
