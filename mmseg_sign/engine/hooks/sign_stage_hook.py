"""SIGNStageHook: which SIGN stage runs at which iteration (the plan:
:class:`~mmseg_sign.structures.StagePlan`; the stages: docs/reproduction.md).
"""
from typing import List, Optional

from mmengine.hooks import Hook
from mmengine.logging import print_log

from mmseg.registry import HOOKS
from ...structures.stage_plan import StagePlan, required_optim_wrappers
from ..schedulers import respan
from .runner_state import is_resuming, unwrap_model

#: hooks a SIGN run needs besides this one (the schedule bases in
#: configs/_base_/schedules register them as ``default_hooks``)
COMPANION_HOOKS = dict(sign_split='ClassSplitHook',
                       sign_resume='ResumeCheckHook',
                       sign_teacher='SelfTrainingTeacherHook')


@HOOKS.register_module()
class SIGNStageHook(Hook):
    """Switches the model to the stage of ``runner.iter`` before every
    iteration, and makes the run and each optimizer's schedulers follow the
    plan.

    Args:
        stages (list[dict]): the stage plan, in order, e.g.
            ``[dict(name='train', iters=40000),
            dict(name='transfer', iters=6000)]``; extra keys of a stage are
            its options (:data:`~mmseg_sign.structures.STAGE_OPTIONS`),
            passed to ``model.set_stage``.
        val_at_stage_end (bool): run the validation loop when a stage ends
            (besides ``train_cfg.val_interval``), so the log shows the GZSL
            table after every stage.
    """
    priority = 'VERY_HIGH'

    def __init__(self, stages: List[dict], val_at_stage_end: bool = True):
        self.plan = StagePlan(stages)
        self.val_at_stage_end = val_at_stage_end
        self._current: Optional[int] = None

    def before_run(self, runner) -> None:
        have = {type(hook).__name__ for hook in runner.hooks}
        missing = {k: v for k, v in COMPANION_HOOKS.items() if v not in have}
        if missing:
            raise ValueError(
                f'SIGNStageHook: the run lacks the hooks {list(missing.values())}'
                ' that check the class split, --resume and the self-training '
                'teacher; inherit a schedule from configs/_base_/schedules, '
                'or add ' + ', '.join(f"{k}=dict(type='{v}')"
                                      for k, v in missing.items())
                + ' to default_hooks.')

    def before_train(self, runner) -> None:
        self._follow_plan(runner)
        wrappers = getattr(runner.optim_wrapper, 'optim_wrappers', {})
        for i, stage in enumerate(self.plan):
            missing = [n for n in required_optim_wrappers(stage)
                       if n not in wrappers]
            if missing:
                raise ValueError(
                    f"SIGNStageHook: stages[{i}] ({stage['name']}"
                    + (f", mode={stage['mode']!r}" if 'mode' in stage
                       else '') + f') needs the optimizer wrappers '
                    f'{missing}, but optim_wrapper has {list(wrappers)}; '
                    'add them to optim_wrapper (see configs/_base_/'
                    'schedules).')
            self._check_disjoint(i, stage, wrappers)
        first = self.plan[0]['name']
        if first != 'train' and not (runner.cfg.get('load_from')
                                     or is_resuming(runner)):
            raise ValueError(
                f"SIGNStageHook: the plan starts with '{first}', which "
                'needs a trained backbone, SIM and G; start from the '
                "checkpoint of a 'train' stage with load_from=PATH (or "
                "put dict(name='train', iters=...) first).")
        self._current = None

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

    def _follow_plan(self, runner) -> None:
        """The plan is the one home of the iteration counts: the run lasts
        the sum of the stages, and the schedulers of each optimizer
        wrapper span the stage that steps it (``begin`` / ``end``, and
        PolyLR's length), so a plan changed with ``--cfg-options
        custom_hooks.0.stages.0.iters=N`` needs nothing else. A scheduler
        of a wrapper no stage uses is left as configured."""
        total = self.plan.total_iters
        if runner.train_loop.max_iters != total:
            raise ValueError(
                f'SIGNStageHook: the plan lasts {total} iterations '
                f'({self.plan.describe()}), the training loop '
                f"{runner.train_loop.max_iters}: use train_cfg = dict(type="
                "'StagePlanTrainLoop', ...), whose length is the plan's "
                '(configs/_base_/schedules).')
        schedulers = runner.param_schedulers
        if not isinstance(schedulers, dict):
            return
        for index, stage in enumerate(self.plan):
            begin = self.plan.start(index)
            for name in required_optim_wrappers(stage):
                for scheduler in schedulers.get(name, []):
                    if not getattr(scheduler, 'by_epoch', False):
                        respan(scheduler, begin, begin + stage['iters'])

    def before_train_iter(self, runner, batch_idx: int,
                          data_batch=None) -> None:
        index = self.plan.index_at(runner.iter)
        model = unwrap_model(runner)
        start = self.plan.start(index)
        model.stage_iter = runner.iter - start
        if index == self._current:
            return
        if self._current is not None:  # a stage just ended
            self._validate_stage_end(runner)
            self._forget_stage_losses(runner)
        stage = self.plan[index]
        model.set_stage(stage['name'], **{
            k: v for k, v in stage.items() if k not in ('name', 'iters')})
        model.stage_iter = runner.iter - start  # set_stage reset it
        print_log(
            f"SIGN stage '{stage['name']}' ({index + 1}/{len(self.plan)}): "
            f"iterations {start + 1}-{start + stage['iters']}"
            + (f', resumed at {runner.iter + 1}'
               if runner.iter > start and self._current is None else ''),
            logger='current')
        self._current = index

    def _validate_stage_end(self, runner) -> None:
        """Validate the model of the stage that just ended (the loop only
        validates every ``val_interval`` iterations)."""
        loop = runner.train_loop
        if (not self.val_at_stage_end or runner.val_loop is None
                or runner.iter < loop.val_begin
                or runner.iter % loop.val_interval == 0):
            return
        ended = self.plan[self.plan.index_at(runner.iter - 1)]['name']
        print_log(f"Validation at the end of stage '{ended}'",
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
