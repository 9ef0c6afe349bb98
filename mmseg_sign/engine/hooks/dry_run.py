"""A dry run of the first training sample before iteration 1: mistakes in
the data or the model shape fail in seconds, not after a 40k-iteration
stage (:class:`DryRunHook`, registered by the schedule bases).
Every other label map is checked where it is read (the zero-shot datasets'
``CheckedLoadAnnotations``); the validation set's label files are all read
before training too (:func:`check_label_files`).
"""
import random

import numpy as np
import torch
from mmengine.dataset import pseudo_collate
from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmseg.registry import HOOKS

from ...datasets.transforms.zero_shot import (check_label_values,
                                              check_raw_label, present_values,
                                              read_label_map, reduce_label)
from ..runner.runner_state import stage_plan, unwrap_model


@HOOKS.register_module()
class DryRunHook(Hook):
    """Before iteration 1, load the first training sample and run the model
    on it (:func:`dry_run_first_sample`): label / image size mismatches, a
    wrong ``neck.in_index`` / ``in_channels``, 16-bit label maps and
    1-based labels without ``reduce_zero_label`` fail at once with the
    fix. Runs after the class split is set (``ClassSplitHook``)."""
    priority = 'HIGH'

    def __init__(self, check_val_labels: bool = True):
        self.check_val_labels = check_val_labels

    def before_train(self, runner) -> None:
        check_stage_loop(runner)
        dry_run_first_sample(
            unwrap_model(runner), runner.train_dataloader.dataset)
        if self.check_val_labels and runner.val_loop is not None:
            check_label_files(runner.val_loop.dataloader.dataset)


def check_stage_loop(runner) -> None:
    """A model with SIGN's stages (``ZeroShotEncoderDecoder``) trains under
    ``StagePlanTrainLoop``: under mmengine's ``IterBasedTrainLoop`` it would
    run its train stage alone (no transfer: the unseen classes are never
    learnt) and end without a word."""
    model = unwrap_model(runner)
    if hasattr(model, 'set_stage') and stage_plan(runner) is None:
        loop = type(runner.train_loop).__name__
        raise ValueError(
            f'{type(model).__name__} trains in stages (train, transfer, '
            f'self-training), but the training loop is {loop}, which would '
            'run its train stage alone: C would never learn the unseen '
            "classes. Use train_cfg=dict(type='StagePlanTrainLoop', "
            "stages=[dict(name='train', iters=...), dict(name='transfer', "
            "iters=...), ...]) (the schedule bases in configs/_base_/"
            'schedules have it), without max_iters.')


def check_label_files(dataset) -> None:
    """Every label file of ``dataset`` (the validation set: read once
    before training, so a bad value in its last file fails now, not at the
    end of a stage) holds only class indices and the ignore value after
    the dataset's ``reduce_zero_label`` / ``label_map``.

    Args:
        dataset (BaseSegDataset): a built dataset.

    Raises:
        ValueError: naming the first bad file and its values.
    """
    classes = dataset.metainfo.get('classes') or ()
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        path = info.get('seg_map_path')
        if not path:
            continue
        reduce = bool(info.get('reduce_zero_label', False))
        seg = reduce_label(
            check_raw_label(read_label_map(path), path), reduce,
            info.get('label_map'))
        check_label_values(seg,
                           info.get('num_classes') or len(classes),
                           info.get('ignore_index', 255), path, reduce)


def _rng_states():
    return (random.getstate(), np.random.get_state(), torch.get_rng_state(),
            torch.cuda.get_rng_state_all()
            if torch.cuda.is_available() else None)


def _set_rng_states(states) -> None:
    random.setstate(states[0])
    np.random.set_state(states[1])
    torch.set_rng_state(states[2])
    if states[3] is not None:
        torch.cuda.set_rng_state_all(states[3])


def check_raw_label_map(info: dict,
                        num_classes: int,
                        ignore_index: int = 255) -> None:
    """Checks on the label file itself, before mmseg's ``LoadAnnotations``
    casts it to uint8 (16-bit values would wrap silently) and reduces it.

    ``info``: a data info with ``seg_map_path`` and ``reduce_zero_label``.

    Args:
        info (dict): a data info (``seg_map_path``, ``reduce_zero_label``,
            ``label_map``).
        num_classes (int): the dataset's class count.
        ignore_index (int): the ignore value.

    Raises:
        ValueError: naming the file and the fix.
    """
    path = info.get('seg_map_path')
    if not path:
        return
    if info.get('label_map'):  # a class subset: raw values are the full set
        num_classes = len(info['label_map'])
    # decodable, one channel, integer, no value that uint8 would wrap
    seg = check_raw_label(read_label_map(path), path)
    values = present_values(seg)
    labels = values[values != ignore_index]
    if not info.get('reduce_zero_label', False) and labels.size and \
            labels.max() == num_classes and labels.min() >= 1:
        raise ValueError(
            f'{path}: label values run from {int(labels.min())} to '
            f'{num_classes} for {num_classes} classes: 1-based labels with 0 '
            'for background; set reduce_zero_label=True on the dataset (and '
            'in LoadAnnotations).')
    # The other direction (reduce_zero_label=True on maps that are already
    # 0..K-1) has no tell-tale value (VOC's 1-based maps hold 0 and 255
    # too): the project's datasets refuse it at build time from their
    # declared convention (ZeroShotMixin.REDUCE_ZERO_LABEL); for others the
    # reading is logged for the user to see.
    reading = ('reduce_zero_label=True: 0 -> ignore, v -> v-1' if info.get(
        'reduce_zero_label', False) else
               'reduce_zero_label=False: v is class v')
    print_log(
        f'{path}: raw label values {[int(v) for v in values[:12]]}'
        f'{" ..." if len(values) > 12 else ""} read with {reading} '
        f'({num_classes} classes, {ignore_index} = ignore)',
        logger='current')


def dry_run_first_sample(model, dataset) -> None:
    """Load the first training sample through the training pipeline and run
    the model's inference path on it (eval mode, no gradient, every random
    state restored afterwards, so runs and resumed runs stay identical).

    Raises ``ValueError`` naming the problem and the fix for: a label map
    whose size differs from its image's, a backbone level that does not
    exist or whose channels differ from ``neck.in_channels``, and the label
    file checks of :func:`check_raw_label_map`.

    Args:
        model (nn.Module): the segmentor.
        dataset (BaseSegDataset): the training dataset.
    """
    if not len(dataset):
        raise ValueError('The training dataset is empty: check data_root, '
                         'data_prefix and ann_file.')
    states = _rng_states()
    was_training = model.training
    try:
        info = dataset.get_data_info(0)
        check_raw_label_map(info, len(dataset.metainfo['classes']),
                            getattr(dataset, 'ignore_index', 255))
        sample = dataset[0]
        img_shape = tuple(sample['inputs'].shape[-2:])
        seg_shape = tuple(sample['data_samples'].gt_sem_seg.shape)
        if img_shape != seg_shape:
            raise ValueError(
                f"{info.get('seg_map_path', '?')}: the label map is "
                f'{seg_shape[0]}×{seg_shape[1]} after the training pipeline '
                f'but its image is {img_shape[0]}×{img_shape[1]}; label '
                'maps must have their image\'s size.')
        model.eval()
        with torch.no_grad():
            data = model.data_preprocessor(pseudo_collate([sample]), False)
            feats = model.backbone(data['inputs'])
            if model.with_neck:  # SPNet: none
                _check_neck_input(model.neck, feats)
                feats = model.neck(feats)
            model.decode_head.forward(feats)
    finally:
        model.train(was_training)
        _set_rng_states(states)


def _check_neck_input(neck, feats) -> None:
    """The neck's ``in_index`` / ``in_channels`` against the backbone's
    outputs, with the numbers the fix needs."""
    if not isinstance(feats, (list, tuple)):
        return
    channels = [f.shape[1] for f in feats]
    indices = neck.in_index if isinstance(neck.in_index, (list, tuple)) \
        else [neck.in_index]
    for i in indices:
        if not -len(feats) <= i < len(feats):
            raise ValueError(
                f'neck.in_index={neck.in_index!r}, but the backbone gives '
                f'{len(feats)} output(s) with {channels} channels; set '
                "neck.in_index (or the backbone's out_indices).")
    want = sum(channels[i] for i in indices)
    proj = getattr(neck, 'input_proj', None)
    have = neck.channels if proj is None else proj.in_channels
    if isinstance(have, (list, tuple)):  # a projection over several levels
        want = [channels[i] for i in indices]
        have = list(have)
    if want != have:
        raise ValueError(
            f'neck.in_channels is {have}, but the backbone outputs '
            f'{indices} have {[channels[i] for i in indices]} channels '
            f'(backbone outputs: {channels}); set neck.in_channels={want}.')
