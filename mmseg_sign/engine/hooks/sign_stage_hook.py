"""SIGNStageHook: which SIGN stage runs at which iteration (DESIGN §3.4)."""
from typing import List, Optional

from mmengine.hooks import Hook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper

from mmseg.registry import HOOKS
from ...models.segmentors.stages import (required_optim_wrappers,
                                         stage_options)


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
    """
    priority = 'VERY_HIGH'

    def __init__(self, stages: List[dict], val_at_stage_end: bool = True):
        self.val_at_stage_end = val_at_stage_end
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
        if 'sign_teacher' in checkpoint and getattr(runner, '_resume', False):
            self._model(runner).build_teacher(checkpoint['sign_teacher'])

    def before_train(self, runner) -> None:
        max_iters = runner.train_loop.max_iters
        if max_iters != self.total_iters:
            plan = ' + '.join(f"{s['name']} {s['iters']}"
                              for s in self.stages)
            raise ValueError(
                f'SIGNStageHook: the stages add up to {self.total_iters} '
                f'iterations ({plan}) but train_cfg.max_iters is '
                f'{max_iters}; make them equal.')
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
        self._current = None

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
