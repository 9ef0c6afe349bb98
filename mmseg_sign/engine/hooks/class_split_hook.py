"""ClassSplitHook: one seen / unseen split for the whole run (the training
data, the model, the validation / test data, the metrics and any checkpoint
it starts from), read through :mod:`mmseg_sign.structures.class_split`."""
from collections.abc import Mapping

from mmengine.hooks import Hook
from mmseg.registry import HOOKS

from ...datasets.zero_shot import mask_unseen_labels
from ...datasets.zero_shot_wrapper import metainfo_from_cfg
from ...structures.class_split import checkpoint_unseen_classes, resolve_split
from ..runner.runner_state import (is_resuming, is_training, stage_plan,
                                   unwrap_model)

SPLIT_FIX = (
    'Set the split in one place: leave every dataset at its default split, '
    'or give the same metainfo to train_dataloader, val_dataloader and '
    'test_dataloader through one variable, e.g. '
    "split = dict(unseen_classes=('cow', 'sofa')) and "
    'dataset=dict(metainfo=split) in each (docs/user_guide.md, '
    '"Datasets"); a metric '
    'needs no split of its own.')


@HOOKS.register_module()
class ClassSplitHook(Hook):
    """Before training: no unseen label leaves the training data, every
    consumer of the split agrees with the training dataset's, and the head
    gets that split; a checkpoint trained with another split is refused
    (unless ``allow_split_change=True`` in the config)."""
    priority = 5  # before the VERY_HIGH hooks

    def before_train(self, runner) -> None:
        model = unwrap_model(runner)
        head = model.decode_head
        if hasattr(head, 'require_table'):
            head.require_table()  # not a placeholder awaiting a checkpoint
        dataset = runner.train_dataloader.dataset
        mask_unseen_labels(dataset)  # a zero-shot dataset's own check
        meta = dataset.metainfo
        if 'unseen_classes' in meta:
            self._set_split(runner, head, meta)
            if not meta['unseen_classes']:
                self._check_metrics_need_no_unseen(runner)
        self._check_unseen_for_plan(runner, head)

    @staticmethod
    def _check_metrics_need_no_unseen(runner) -> None:
        """A split without unseen classes and a GZSL metric: its unseen and
        harmonic mIoU are undefined, so the first validation would fail
        after a whole stage; fail now."""
        for key in ('val_evaluator', 'test_evaluator'):
            if 'GZSLIoUMetric' in str(runner.cfg.get(key)):
                raise ValueError(
                    'ClassSplitHook: the training dataset\'s split has no '
                    f'unseen classes, but {key} is GZSLIoUMetric, whose '
                    'unseen and harmonic mIoU are then undefined (the run '
                    'would fail at its first validation). Set unseen_classes '
                    "in the datasets' metainfo, or use "
                    f"{key} = dict(type='IoUMetric').")

    def _set_split(self, runner, head, meta: dict) -> None:
        """Check every consumer against the training dataset's split and
        give the split to the head."""
        self.check_one_split(runner, meta)
        if hasattr(head, 'set_class_split'):
            if head.unseen_classes is not None:
                config_unseen = tuple(head.class_names[i]
                                      for i in head.unseen_ids)
                if set(config_unseen) != set(meta['unseen_classes']):
                    raise ValueError(
                        'decode_head.unseen_classes '
                        f'{config_unseen} differ from the training '
                        f"dataset's {tuple(meta['unseen_classes'])}; set the "
                        'split in one place (the dataset metainfo).')
            head.set_class_split(meta['unseen_classes'], meta['classes'])

    @staticmethod
    def _check_unseen_for_plan(runner, head) -> None:
        """A stage that learns the unseen classes gets some."""
        needs = [
            s['name'] for s in stage_plan(runner) or []
            if s['name'] in ('transfer', 'self_train')
        ]
        check_split_has_unseen(needs, head)

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        """``--resume`` / ``load_from`` a checkpoint trained with another
        split than the training dataset's: the model has learnt classes
        that are now unseen from their labels (or the reverse)."""
        if not is_training(runner) or \
                runner.cfg.get('allow_split_change', False):
            return
        meta = runner.train_dataloader.dataset.metainfo
        if meta.get('unseen_classes') is None:
            return
        trained = checkpoint_unseen_classes(checkpoint, meta.get('classes'))
        now = tuple(meta['unseen_classes'])
        if trained is None or set(trained) == set(now):
            return
        how = ('--resume: the checkpoint was' if is_resuming(runner) else
               f'load_from={runner.cfg.get("load_from")!r}: that '
               'checkpoint was')
        learnt = [c for c in now if c not in trained]
        raise ValueError(
            f'ClassSplitHook: {how} trained with the unseen classes '
            f'{tuple(trained)}, but the training dataset now has {now}' +
            (f'; the model has learnt {tuple(learnt)} from their labels, '
             'which would then be scored as unseen' if learnt else '') +
            '. Train with the split of the checkpoint (the datasets\' '
            'metainfo=dict(unseen_classes=...)), start a new run in another '
            'work dir, or set allow_split_change=True in the config '
            '(--cfg-options allow_split_change=True) if the change is '
            'deliberate.')

    @staticmethod
    def check_one_split(runner, train_meta: dict) -> None:
        """Every consumer of the split (the validation and test datasets,
        any metric that sets its own split) agrees with ``train_meta``'s;
        else a ValueError naming both places, both splits and the fix.
        Reads the configs where the loops are not built yet.

        Args:
            runner (Runner): the runner (its ``cfg`` and ``val_loop``).
            train_meta (dict): the training dataset's metainfo.
        """
        reference = tuple(train_meta['unseen_classes'])
        classes = train_meta.get('classes')
        cfg = runner.cfg
        places = []
        val_dataset = getattr(
            getattr(runner.val_loop, 'dataloader', None), 'dataset', None)
        for name, built in (('val', val_dataset), ('test', None)):
            meta = getattr(built, 'metainfo', None)
            if meta is None:
                loader_cfg = cfg.get(f'{name}_dataloader')
                if loader_cfg is None:
                    continue
                meta = metainfo_from_cfg(loader_cfg.get('dataset'))
            if meta is not None and 'unseen_classes' in meta:
                places.append((f'{name}_dataloader.dataset',
                               tuple(meta['unseen_classes'])))
            places += metric_splits(
                cfg.get(f'{name}_evaluator'),
                (meta or {}).get('classes', classes), f'{name}_evaluator')
        for where, unseen in places:
            if set(unseen) != set(reference):
                raise ValueError(
                    'ClassSplitHook: the seen/unseen split differs between '
                    f'train_dataloader.dataset (unseen {reference}) and '
                    f'{where} (unseen {unseen}); the model would train on '
                    f'one split and be scored on the other. {SPLIT_FIX}')


def check_split_has_unseen(stage_names, head) -> None:
    """Stages that learn the unseen classes need some.

    Args:
        stage_names (list[str]): the plan's ``transfer`` / ``self_train``
            stages.
        head (nn.Module): the decode head (its ``unseen_mask``).
    """
    unseen_mask = getattr(head, 'unseen_mask', None)
    if stage_names and unseen_mask is not None and \
            not bool(unseen_mask.any()):
        raise ValueError(
            f'ClassSplitHook: the stages {stage_names} learn the unseen '
            'classes, but the split has none; set unseen_classes in the '
            'datasets\' metainfo (docs/user_guide.md, "Datasets").')


def metric_splits(evaluator_cfg, classes, where: str) -> list:
    """The metrics of an evaluator config that set their own split.

    Args:
        evaluator_cfg (dict | list): ``val_evaluator`` / ``test_evaluator``.
        classes (Sequence[str]): the dataset's classes.
        where (str): the config key, for messages.

    Returns:
        list[tuple[str, tuple[str]]]: ``(place, unseen names)`` each.
    """
    if isinstance(evaluator_cfg, Mapping) and 'metrics' in evaluator_cfg:
        evaluator_cfg = evaluator_cfg['metrics']
    metrics = evaluator_cfg if isinstance(evaluator_cfg, (list, tuple)) \
        else [evaluator_cfg]
    found = []
    for i, metric in enumerate(metrics):
        if not isinstance(metric, Mapping) or classes is None:
            continue
        seen = metric.get('seen_classes')
        unseen = metric.get('unseen_classes')
        if seen is None and unseen is None:
            continue
        place = where + (f'[{i}]' if len(metrics) > 1 else '')
        found.append((place, resolve_split(classes, seen, unseen)[1]))
    return found
