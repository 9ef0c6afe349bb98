"""SIGNStageHook: which SIGN stage runs at which iteration (the stages:
docs/reproduction.md)."""
import logging
import re
from typing import List, Optional

from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.runner import BaseLoop

from mmseg.registry import HOOKS
from ...models.segmentors.stages import (required_optim_wrappers,
                                         stage_options)
from .dry_run import dry_run_first_sample


def _gan_parts_used(stage: dict) -> set:
    """Which of G (``generator``) and D (``discriminator``) a stage
    (filled in by ``stage_options``) runs."""
    name = stage['name']
    if name == 'transfer':
        return {'generator'} | ({'discriminator'}
                                if stage['mode'] == 'alternate' else set())
    if name == 'self_train':
        if stage['update'] == 'train':
            return {'generator', 'discriminator'}
        return {'generator'} if stage['synth_weight'] else set()
    return {'generator', 'discriminator'}  # train


@HOOKS.register_module()
class SIGNStageHook(Hook):
    """Derives the stage from ``runner.iter`` before every iteration.

    The stage is never stored: a run resumed at any iteration lands in the
    right stage. Also copies the dataset's seen/unseen split into the head
    and checks the stage plan against ``train_cfg.max_iters``.

    Args:
        stages (list[dict]): in order, e.g.
            ``[dict(name='train', iters=40000),
            dict(name='transfer', iters=6000)]``; extra keys of a stage are
            passed to ``model.set_stage``.
        val_at_stage_end (bool): run the validation loop when a stage ends
            (besides ``train_cfg.val_interval``), so the log shows the GZSL
            table after every stage.
        dry_run (bool): before iteration 1, load the first training sample
            and run the model on it (:func:`dry_run_first_sample`): label /
            image size mismatches, a wrong ``neck.in_index`` /
            ``in_channels``, 16-bit label maps and 1-based labels without
            ``reduce_zero_label`` fail at once with the fix.
    """
    priority = 'VERY_HIGH'

    def __init__(self, stages: List[dict], val_at_stage_end: bool = True,
                 dry_run: bool = True):
        self.val_at_stage_end = val_at_stage_end
        self.dry_run = dry_run
        if not stages:
            raise ValueError('SIGNStageHook needs at least one stage.')
        self.stages = [stage_options(i, s) for i, s in enumerate(stages)]
        self.total_iters = sum(s['iters'] for s in self.stages)
        self._current: Optional[int] = None

    @staticmethod
    def _check_disjoint(index: int, stage: dict, wrappers) -> None:
        """The optimizer wrappers one stage steps must not share a
        parameter (it would be updated twice per iteration)."""
        owner = {}
        for name in required_optim_wrappers(stage):
            for group in wrappers[name].optimizer.param_groups:
                for p in group['params']:
                    if owner.setdefault(id(p), name) != name:
                        raise ValueError(
                            f"SIGNStageHook: stages[{index}] "
                            f"({stage['name']}) steps optim_wrapper."
                            f'{owner[id(p)]} and optim_wrapper.{name}, '
                            'which both update the same parameters; give '
                            'each module to one of them.')

    def stage_index_at(self, iteration: int) -> int:
        """Index of the stage that runs iteration ``iteration`` (0-based);
        iterations past the plan stay in the last stage."""
        end = 0
        for i, stage in enumerate(self.stages):
            end += stage['iters']
            if iteration < end:
                return i
        return len(self.stages) - 1

    def stage_at(self, iteration: int) -> dict:
        return self.stages[self.stage_index_at(iteration)]

    def stage_start(self, index: int) -> int:
        return sum(s['iters'] for s in self.stages[:index])

    @staticmethod
    def _model(runner):
        model = runner.model
        return model.module if is_model_wrapper(model) else model

    def _validate_stage_end(self, runner) -> None:
        """Validate the model of the stage that just ended (the loop only
        validates every ``val_interval`` iterations)."""
        loop = runner.train_loop
        if (not self.val_at_stage_end or runner.val_loop is None
                or runner.iter < loop.val_begin
                or runner.iter % loop.val_interval == 0):
            return
        print_log('Validation at the end of stage '
                  f"'{self.stage_at(runner.iter - 1)['name']}'",
                  logger='current')
        runner.val_loop.run()
        runner.model.train()

    @staticmethod
    def _forget_stage_losses(runner) -> None:
        """Drop the previous stage's losses from the message hub so that the
        log does not repeat their last values during the next stage."""
        scalars = runner.message_hub.log_scalars
        for key in list(scalars):
            if key.startswith('train/') and not key.endswith(('lr', 'time')):
                del scalars[key]

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        """Save the self-training teacher, so a resumed run uses it."""
        teacher = getattr(self._model(runner), 'teacher', None)
        if teacher is not None:
            checkpoint['sign_teacher'] = teacher.state_dict()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        if not isinstance(getattr(runner, '_train_loop', None), BaseLoop):
            return  # tools/test.py, init_model: not a training run
        resume = getattr(runner, '_resume', False)
        self._check_checkpoint_split(runner, checkpoint, resume)
        if not resume:
            self._check_gan_weights(runner, checkpoint)
            return
        self._check_plan_reaches(checkpoint)
        self._start_new_wrappers_fresh(runner, checkpoint)
        if 'sign_teacher' in checkpoint:
            self._model(runner).build_teacher(checkpoint['sign_teacher'])

    # ------------------------------------------------ checkpoint checks
    @staticmethod
    def _check_checkpoint_split(runner, checkpoint: dict,
                                resume: bool) -> None:
        """``--resume`` / ``load_from`` a checkpoint trained with another
        seen/unseen split than the training dataset's: the model has learnt
        classes that are now unseen from their labels (or the reverse).
        Refused unless ``allow_split_change=True`` in the config."""
        if runner.cfg.get('allow_split_change', False):
            return
        from .strict_checkpoint_hook import checkpoint_unseen_classes
        meta = runner.train_dataloader.dataset.metainfo
        if meta.get('unseen_classes') is None:
            return
        trained = checkpoint_unseen_classes(checkpoint, meta.get('classes'))
        now = tuple(meta['unseen_classes'])
        if trained is None or set(trained) == set(now):
            return
        how = ('--resume: the checkpoint was' if resume else
               f'load_from={runner.cfg.get("load_from")!r}: that '
               'checkpoint was')
        learnt = [c for c in now if c not in trained]
        raise ValueError(
            f'SIGNStageHook: {how} trained with the unseen classes '
            f'{tuple(trained)}, but the training dataset now has {now}'
            + (f'; the model has learnt {tuple(learnt)} from their labels, '
               'which would then be scored as unseen' if learnt else '')
            + '. Train with the split of the checkpoint (the datasets\' '
            'metainfo=dict(unseen_classes=...)), start a new run in another '
            'work dir, or set allow_split_change=True in the config '
            '(--cfg-options allow_split_change=True) if the change is '
            'deliberate.')

    def _check_plan_reaches(self, checkpoint: dict) -> None:
        """``--resume`` from a checkpoint at or past the plan's end would
        train nothing and exit 0."""
        meta = checkpoint.get('meta')
        done = meta.get('iter') if isinstance(meta, dict) else None
        if not isinstance(done, int) or done < self.total_iters:
            return
        plan = ' + '.join(f"{s['name']} {s['iters']}" for s in self.stages)
        raise ValueError(
            f'SIGNStageHook: --resume from a checkpoint at iteration {done}, '
            f'but the stage plan ends at iteration {self.total_iters} '
            f'({plan}): there is nothing left to train. Lengthen the plan '
            f'(e.g. --cfg-options custom_hooks.0.stages.'
            f'{len(self.stages) - 1}.iters=N, or append a stage), or test '
            'the checkpoint with tools/test.py.')

    def _check_gan_weights(self, runner, checkpoint: dict) -> None:
        """``load_from`` a checkpoint without G or D (a published
        checkpoint, or another model's) with a plan whose stages before any
        ``train`` stage use them: they would start random and C would learn
        from a random G. Refused unless ``allow_untrained_gan=True``."""
        if runner.cfg.get('allow_untrained_gan', False) or \
                not isinstance(checkpoint, dict):
            return
        state = checkpoint.get('state_dict', checkpoint)
        if not isinstance(state, dict):
            return
        have = {re.sub(r'^module\.', '', k) for k in state}
        parts = {}
        for key in self._model(runner).state_dict():
            for part in ('generator', 'discriminator'):
                if key.startswith(f'decode_head.{part}.') and \
                        'num_batches_tracked' not in key:
                    parts.setdefault(part, []).append(key not in have)
        missing = {part for part, lacks in parts.items() if any(lacks)}
        if not missing:
            return
        users = []
        for i, stage in enumerate(self.stages):
            if stage['name'] == 'train':
                break  # trains G and D from scratch first
            used = _gan_parts_used(stage) & missing
            if used:
                users.append(f"stages[{i}] ({stage['name']}) uses "
                             + ' and '.join(sorted(used)))
        if not users:
            return
        which = ' and '.join(f'decode_head.{p}' for p in sorted(missing))
        published = isinstance(checkpoint.get('meta'), dict) and \
            checkpoint['meta'].get('sign_inference_only')
        raise ValueError(
            f'SIGNStageHook: load_from={runner.cfg.get("load_from")!r} has '
            f'no weights for {which}'
            + (' (a published checkpoint: tools/publish_model.py leaves G '
               "and D's GAN head out)" if published else '')
            + f', but {"; ".join(users)}: they would start from random '
            'weights and the classifier would learn unseen classes from a '
            "random generator. Start from the 'train' stage's training "
            'checkpoint (iter_N.pth in its work dir, which holds G and D), '
            "put dict(name='train', iters=...) first in the plan, or set "
            'allow_untrained_gan=True in the config (--cfg-options '
            'allow_untrained_gan=True) if this is deliberate.')

    @staticmethod
    def _start_new_wrappers_fresh(runner, checkpoint: dict) -> None:
        """``--resume`` after optimizer wrappers were added to the config
        (e.g. a stage appended to the plan): mmengine would fail with a
        KeyError on their missing scheduler states; they start fresh
        instead, and the log says so."""
        saved = checkpoint.get('param_schedulers')
        current = runner.param_schedulers
        if isinstance(saved, dict) and isinstance(current, dict):
            for name in current:
                if name not in saved:
                    saved[name] = []
        wrappers = runner.optim_wrapper
        names = list(getattr(wrappers, 'optim_wrappers', None) or [
            k for k in (wrappers or {}) if k not in ('constructor', 'type')])
        new = [n for n in names if n not in checkpoint.get('optimizer', {})]
        if new:
            print_log(f'Resuming: the checkpoint has no state for the '
                      f'optimizer wrappers {new} (added to the config since); '
                      'they and their schedulers start fresh.',
                      logger='current', level=logging.WARNING)
        SIGNStageHook._restart_regrouped_wrappers(runner, checkpoint, names)

    @staticmethod
    def _restart_regrouped_wrappers(runner, checkpoint: dict, names) -> None:
        """``--resume`` after a wrapper's ``modules`` changed (e.g. a
        checkpoint from before issue 16, whose ``self_train`` also held C):
        torch refuses the saved state (its parameter groups differ). A
        wrapper that never stepped starts fresh, with its schedulers; one
        that did is an error naming it."""
        saved = checkpoint.get('optimizer', {})
        built = getattr(runner.optim_wrapper, 'optim_wrappers', None)
        if not isinstance(saved, dict) or not built:
            return  # not (yet) an OptimWrapperDict: nothing to compare
        for name in names:
            if name not in saved or name not in built or \
                    not isinstance(saved[name], dict):
                continue
            optimizer = built[name].optimizer
            now = [len(g['params']) for g in optimizer.param_groups]
            before = [len(g['params'])
                      for g in saved[name].get('param_groups', [])]
            if now == before:
                continue
            if saved[name].get('state'):
                raise ValueError(
                    f'Resuming: optim_wrapper.{name} updates other '
                    f'parameters than in the checkpoint ({sum(before)} '
                    f'parameters in {len(before)} groups there, '
                    f'{sum(now)} in {len(now)} groups now), and it has '
                    'already stepped, so its state cannot be carried over. '
                    f'Resume with the `modules` the run was started with, '
                    'or start a new run from the checkpoint with '
                    'load_from=... (its optimizers then start fresh).')
            del saved[name]
            schedulers = checkpoint.get('param_schedulers')
            if isinstance(schedulers, dict):
                schedulers[name] = []
            print_log(f'Resuming: optim_wrapper.{name} now updates other '
                      'parameters than in the checkpoint and has not '
                      'stepped yet; it and its schedulers start fresh.',
                      logger='current', level=logging.WARNING)

    def before_train(self, runner) -> None:
        head = self._model(runner).decode_head
        if hasattr(head, 'require_table'):
            head.require_table()  # not a placeholder awaiting a checkpoint
        self._mask_unseen_labels(runner.train_dataloader.dataset)
        self._follow_plan(runner)
        wrappers = runner.optim_wrapper
        for i, stage in enumerate(self.stages):
            missing = [n for n in required_optim_wrappers(stage)
                       if n not in getattr(wrappers, 'optim_wrappers', {})]
            if missing:
                raise ValueError(
                    f"SIGNStageHook: stages[{i}] ({stage['name']}"
                    + (f", mode={stage['mode']!r}" if 'mode' in stage
                       else '') + f') needs the optimizer wrappers '
                    f'{missing}, but optim_wrapper has '
                    f'{list(getattr(wrappers, "optim_wrappers", {}))}; add '
                    'them to optim_wrapper (see configs/_base_/schedules).')
            self._check_disjoint(i, stage, wrappers)
        model = self._model(runner)
        meta = runner.train_dataloader.dataset.metainfo
        self._check_one_split(runner, meta)
        head = model.decode_head
        if 'unseen_classes' in meta and hasattr(head, 'set_class_split'):
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
        self._check_plan_can_learn(runner, head)
        if self.dry_run:
            dry_run_first_sample(model, runner.train_dataloader.dataset)
        self._current = None

    def _follow_plan(self, runner) -> None:
        """The plan is the one home of the iteration counts: the run lasts
        the sum of the stages, and the schedulers of each optimizer
        wrapper span the stage that steps it (``begin`` / ``end``, and
        PolyLR's length), so a plan changed with ``--cfg-options
        custom_hooks.0.stages.0.iters=N`` needs nothing else. A scheduler
        of a wrapper no stage uses is left as configured."""
        loop = runner.train_loop
        if loop.max_iters != self.total_iters:
            plan = ' + '.join(f"{s['name']} {s['iters']}"
                              for s in self.stages)
            print_log(f'SIGNStageHook: the run lasts {self.total_iters} '
                      f'iterations ({plan}); train_cfg.max_iters was '
                      f'{loop.max_iters}.', logger='current',
                      level=logging.WARNING)
            loop._max_iters = self.total_iters
        schedulers = runner.param_schedulers
        if not isinstance(schedulers, dict):
            return
        for index, stage in enumerate(self.stages):
            begin = self.stage_start(index)
            end = begin + stage['iters']
            for name in required_optim_wrappers(stage):
                for scheduler in schedulers.get(name, []):
                    if getattr(scheduler, 'by_epoch', False):
                        continue
                    self._respan(scheduler, begin, end)

    @staticmethod
    def _respan(scheduler, begin: int, end: int) -> None:
        """Give an mmengine parameter scheduler the span ``[begin, end)``
        as if it had been built with it. Its step count (``last_step``)
        is recounted from the steps taken so far: a scheduler built with
        ``begin=0`` took an in-span step at construction, which must not
        count in a stage that starts later (PolyLR would otherwise divide
        by zero at the stage's last iteration and MultiStepLR fire one
        step early). On a fresh run, a value its construction step set
        (e.g. LinearLR's start factor) is undone."""
        taken = scheduler._global_step  # index of the last step() call
        was_in_span = scheduler.begin <= taken < scheduler.end
        scheduler.begin, scheduler.end = begin, end
        if hasattr(scheduler, 'total_iters'):  # PolyLR
            scheduler.total_iters = end - begin - 1
        if hasattr(scheduler, 'T_max'):  # cosine annealing
            scheduler.T_max = end - begin
        scheduler.last_step = min(max(taken - begin + 1, 0), end - begin) - 1
        if taken == 0 and was_in_span and scheduler.last_step < 0:
            name = scheduler.param_name
            for group in scheduler.optimizer.param_groups:
                group[name] = group[f'initial_{name}']
            scheduler._last_value = [
                group[name] for group in scheduler.optimizer.param_groups]

    @staticmethod
    def _mask_unseen_labels(dataset) -> None:
        """No unseen label may leave a training dataset: zero-shot datasets
        (also inside mmengine's dataset wrappers) insert MaskUnseenClasses
        where the pipeline lacks it."""
        if hasattr(dataset, 'mask_unseen_labels'):
            dataset.mask_unseen_labels()
        for inner in [getattr(dataset, 'dataset', None),
                      *getattr(dataset, 'datasets', [])]:
            if inner is not None:
                SIGNStageHook._mask_unseen_labels(inner)

    def _check_plan_can_learn(self, runner, head) -> None:
        """A stage that needs unseen classes gets some, and a plan that
        starts after the ``train`` stage starts from trained weights."""
        needs_unseen = [s['name'] for s in self.stages
                        if s['name'] in ('transfer', 'self_train')]
        unseen_mask = getattr(head, 'unseen_mask', None)
        if needs_unseen and unseen_mask is not None and \
                not bool(unseen_mask.any()):
            raise ValueError(
                f'SIGNStageHook: the stages {needs_unseen} learn the unseen '
                'classes, but the split has none; set unseen_classes in the '
                'datasets\' metainfo (README, "Datasets").')
        first = self.stages[0]['name']
        loaded = runner.cfg.get('load_from') or getattr(runner, '_resume',
                                                        False)
        if first != 'train' and not loaded:
            raise ValueError(
                f"SIGNStageHook: the plan starts with '{first}', which "
                'needs a trained backbone, SIM and G; start from the '
                "checkpoint of a 'train' stage with load_from=PATH (or "
                "put dict(name='train', iters=...) first).")

    # ------------------------------------------------------------ one split
    @staticmethod
    def _metainfo_from_cfg(dataset_cfg) -> Optional[dict]:
        """The metainfo a dataset config resolves to, without building the
        dataset (no file is read): the class's ``_load_metainfo``. Dataset
        wrappers (``dataset=`` / ``datasets=[...]``) give their first
        dataset's, as mmengine's wrappers do. ``None`` if unknown."""
        from collections.abc import Mapping

        from mmseg.registry import DATASETS
        if not isinstance(dataset_cfg, Mapping):
            return None
        from ...datasets import dataset_metainfo_from_cfg
        meta = dataset_metainfo_from_cfg(dataset_cfg)  # zero-shot types
        if meta is not None:
            return meta
        if isinstance(dataset_cfg.get('dataset'), Mapping):
            return SIGNStageHook._metainfo_from_cfg(dataset_cfg['dataset'])
        if isinstance(dataset_cfg.get('datasets'), (list, tuple)) and \
                dataset_cfg['datasets']:
            return SIGNStageHook._metainfo_from_cfg(
                dataset_cfg['datasets'][0])
        cls = dataset_cfg.get('type')
        if isinstance(cls, str):
            cls = DATASETS.get(cls)
        if cls is None or not hasattr(cls, '_load_metainfo'):
            return None
        return cls._load_metainfo(dataset_cfg.get('metainfo'))

    @staticmethod
    def _metric_splits(evaluator_cfg, classes, where: str) -> list:
        """``(place, unseen names)`` for every metric config of
        ``evaluator_cfg`` that sets its own split."""
        from collections.abc import Mapping

        from ...datasets.zero_shot import resolve_split
        if isinstance(evaluator_cfg, Mapping) and \
                'metrics' in evaluator_cfg:
            evaluator_cfg = evaluator_cfg['metrics']
        metrics = evaluator_cfg if isinstance(evaluator_cfg,
                                              (list, tuple)) else \
            [evaluator_cfg]
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

    def _check_one_split(self, runner, train_meta) -> None:
        """Every consumer of the seen/unseen split must agree with the
        training dataset's: the validation and test datasets and any metric
        that sets its own split. Fails before iteration 1, naming both
        places, both splits and the fix."""
        if 'unseen_classes' not in train_meta:
            return
        reference = ('train_dataloader.dataset',
                     tuple(train_meta['unseen_classes']))
        classes = train_meta.get('classes')
        places = []
        cfg = getattr(runner, 'cfg', None) or {}
        val_loop = getattr(runner, '_val_loop', None)
        val_dataset = getattr(getattr(val_loop, 'dataloader', None),
                              'dataset', None)
        for name, built in (('val', val_dataset), ('test', None)):
            meta = getattr(built, 'metainfo', None)
            if meta is None:
                loader_cfg = cfg.get(f'{name}_dataloader')
                if loader_cfg is None:
                    continue
                meta = self._metainfo_from_cfg(loader_cfg.get('dataset'))
            if meta is not None and 'unseen_classes' in meta:
                places.append((f'{name}_dataloader.dataset',
                               tuple(meta['unseen_classes'])))
            places += self._metric_splits(
                cfg.get(f'{name}_evaluator'),
                (meta or {}).get('classes', classes), f'{name}_evaluator')
        for where, unseen in places:
            if set(unseen) != set(reference[1]):
                raise ValueError(
                    'SIGNStageHook: the seen/unseen split differs between '
                    f'{reference[0]} (unseen {reference[1]}) and {where} '
                    f'(unseen {unseen}); the model would train on one split '
                    'and be scored on the other. Set the split in one place: '
                    'leave every dataset at its default split, or give the '
                    'same metainfo to train_dataloader, val_dataloader and '
                    'test_dataloader through one variable, e.g. '
                    "split = dict(unseen_classes=('cow', 'sofa')) and "
                    'dataset=dict(metainfo=split) in each (README, '
                    '"Datasets"); a metric needs no split of its own.')

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        index = self.stage_index_at(runner.iter)
        model = self._model(runner)
        if index == self._current:
            model.stage_iter = runner.iter - self.stage_start(index)
            return
        if self._current is not None:  # a stage just ended
            self._validate_stage_end(runner)
            self._forget_stage_losses(runner)
        stage = self.stages[index]
        extra = {k: v for k, v in stage.items() if k not in ('name', 'iters')}
        model.set_stage(stage['name'], **extra)
        start = self.stage_start(index)
        model.stage_iter = runner.iter - start
        print_log(
            f"SIGN stage '{stage['name']}' ({index + 1}/{len(self.stages)}): "
            f"iterations {start + 1}-{start + stage['iters']}"
            + (f', resumed at {runner.iter + 1}'
               if runner.iter > start and self._current is None else ''),
            logger='current')
        self._current = index


def check_max_iters_option(cfg, cfg_options) -> None:
    """``tools/train.py --cfg-options train_cfg.max_iters=N`` with a
    ``SIGNStageHook`` plan of another length: a ValueError (the plan is the
    one home of the iteration counts; the hook would run the plan's
    length, and N would be ignored)."""
    if not cfg_options:
        return
    wanted = None
    for key, value in cfg_options.items():
        if key == 'train_cfg.max_iters':
            wanted = value
        elif key == 'train_cfg' and isinstance(value, dict) and \
                'max_iters' in value:
            wanted = value['max_iters']
    if wanted is None:
        return
    for index, hook in enumerate(cfg.get('custom_hooks') or []):
        if not isinstance(hook, dict) or hook.get('type') not in (
                'SIGNStageHook', SIGNStageHook):
            continue
        stages = [stage_options(i, s)
                  for i, s in enumerate(hook.get('stages') or [])]
        total = sum(s['iters'] for s in stages)
        if wanted == total:
            return
        plan = ' + '.join(f"{s['name']} {s['iters']}" for s in stages)
        example = ' '.join(f'custom_hooks.{index}.stages.{i}.iters=N{i}'
                           for i in range(len(stages)))
        raise ValueError(
            f'--cfg-options train_cfg.max_iters={wanted!r}: the run\'s '
            f'length is set by the SIGN stage plan custom_hooks.{index}.'
            f'stages ({plan} = {total} iterations), the one home of the '
            'iteration counts (it also spans each stage\'s schedulers); '
            'train_cfg.max_iters would be ignored. Change the stages\' '
            f'lengths instead: --cfg-options {example}.')
