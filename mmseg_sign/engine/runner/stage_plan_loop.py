"""StagePlanTrainLoop: the training loop of a SIGN run, and the one owner of
its stage plan (train → transfer → self_train; paper section 3, the stages:
docs/reproduction.md, the data flow: docs/architecture.md).

``train_cfg = dict(type='StagePlanTrainLoop', stages=[...])``: the loop
parses the plan once (:class:`~mmseg_sign.structures.StagePlan`), exposes it
as ``runner.train_loop.plan``, runs as long as it, switches the model to the
stage of every iteration, makes each optimizer's schedulers span the stage
that steps it and validates at the end of every stage. Hooks and tools read
the plan from the loop (:func:`~.runner_state.stage_plan`) or from
``cfg.train_cfg.stages`` (:meth:`StagePlan.from_config`).
"""
from typing import Optional, Sequence

from mmengine.logging import print_log
from mmengine.runner import IterBasedTrainLoop
from mmseg.registry import LOOPS

from ...structures.stage_plan import StagePlan, required_optim_wrappers
from ..schedulers import respan
from .runner_state import is_resuming, unwrap_model

#: hooks a SIGN run needs besides the loop (the schedule bases in
#: configs/_base_/schedules register them as ``default_hooks``)
COMPANION_HOOKS = dict(
    sign_split='ClassSplitHook',
    sign_resume='ResumeCheckHook',
    sign_teacher='SelfTrainingTeacherHook')


def check_run_length(max_iters: Optional[int], plan: StagePlan) -> int:
    """The run's length: the plan's; a ``train_cfg.max_iters`` given in a
    config or on the command line must agree with it.

    Args:
        max_iters (int, optional): ``train_cfg.max_iters``, if set.
        plan (StagePlan): the run's plan.

    Returns:
        int: the plan's total iterations.

    Raises:
        ValueError: ``max_iters`` differs, naming the fix.
    """
    total = plan.total_iters
    if max_iters is not None and max_iters != total:
        example = ' '.join(f'train_cfg.stages.{i}.iters=N{i}'
                           for i in range(len(plan)))
        raise ValueError(
            f'train_cfg.max_iters={max_iters!r}: the run\'s length is set '
            f'by the SIGN stage plan train_cfg.stages ({plan.describe()} = '
            f'{total} iterations), the one home of the iteration counts '
            '(it also spans each stage\'s schedulers). Remove '
            'train_cfg.max_iters, or change the stages\' lengths instead: '
            f'--cfg-options {example}.')
    return total


def check_config_run_length(cfg) -> None:
    """The config's stage plan, checked before the Runner is built (the
    loop checks it again for every other entry point): a bad stage is an error
    that shows the fix, and so is a ``train_cfg.max_iters`` (in the config or
    ``--cfg-options``) that disagrees with the plan.

    Args:
        cfg (Config): the config, ``--cfg-options`` merged.

    Raises:
        ValueError: from :meth:`StagePlan.from_config` or
        :func:`check_run_length`.
    """
    plan = StagePlan.from_config(cfg)
    if plan is not None:
        check_run_length(cfg.train_cfg.get('max_iters'), plan)
        check_val_interval(cfg.train_cfg.get('val_interval'))


def check_plan_fits_model(plan: StagePlan, model) -> None:
    """Options of the plan that the model cannot honour: ``latent=
    'posterior'`` feeds G the SIM's posterior z, which a neck without one
    (ZS3's ``NoisePriorNeck``: z is noise, 0 at its mean) does not have.

    Raises:
        ValueError: naming the stage, the option and the fix.
    """
    neck = getattr(model, 'neck', None)
    if getattr(neck, 'has_posterior', True):
        return
    for i, stage in enumerate(plan):
        if stage['name'] == 'transfer' and \
                stage.get('latent') == 'posterior':
            raise ValueError(
                f"train_cfg.stages[{i}] (transfer): latent='posterior' "
                f'feeds G the latent code of the real pixels, but '
                f'{type(neck).__name__} has no posterior (its z is '
                "noise, 0 at its mean): use latent='prior' (--cfg-"
                f"options train_cfg.stages.{i}.latent=prior), or a SIM "
                'neck.')


def check_val_interval(val_interval) -> None:
    """``train_cfg.val_interval``: a positive number of iterations, or
    ``None`` (validate at the stage ends only); 0 or a string would fail
    deep in mmengine's loop (a ``ZeroDivisionError`` at iteration 1).

    Args:
        val_interval: the configured value.

    Raises:
        ValueError: naming the value and the fix.
    """
    if val_interval is None:
        return
    if isinstance(
            val_interval,
            bool) or not isinstance(val_interval, int) or val_interval < 1:
        raise ValueError(
            f'train_cfg.val_interval={val_interval!r}: validate every N '
            'iterations needs a positive integer N; to validate only at the '
            'stage ends (and at the end of the run), remove val_interval '
            '(or set it to the plan\'s length).')


@LOOPS.register_module()
class StagePlanTrainLoop(IterBasedTrainLoop):
    """mmengine's ``IterBasedTrainLoop`` that runs a SIGN stage plan.

    Before every iteration (after its batch is fetched, before the
    ``before_train_iter`` hooks) the model is switched to the stage of
    ``runner.iter`` (``model.set_stage``) and told its iteration within the
    stage (``model.stage_iter``); the stage is derived from the iteration,
    never stored, so ``--resume`` lands in the right stage. When a stage
    ends, the validation loop runs (``val_at_stage_end``) and the log
    forgets the ended stage's losses.

    Args:
        runner (Runner): the runner.
        dataloader: the training dataloader (or its config).
        stages (list[dict]): the plan, in order, e.g.
            ``[dict(name='train', iters=40000),
            dict(name='transfer', iters=6000)]``; extra keys of a stage are
            its options (:data:`~mmseg_sign.structures.STAGE_OPTIONS`).
            Change one by key: ``--cfg-options train_cfg.stages.1.iters=50``.
        max_iters (int, optional): if given, must equal the plan's length.
        val_interval (int, optional): validate every this many iterations
            besides the stage ends; default: at the stage ends only.
        val_at_stage_end (bool): run the validation loop when a stage ends,
            so the log shows the GZSL table after every stage.
        **kwargs: ``IterBasedTrainLoop``'s other arguments (``val_begin``,
            ``dynamic_intervals``).
    """

    def __init__(self,
                 runner,
                 dataloader,
                 stages: Sequence[dict] = None,
                 max_iters: Optional[int] = None,
                 val_interval: Optional[int] = None,
                 val_at_stage_end: bool = True,
                 **kwargs):
        if stages is None:
            raise ValueError(
                "StagePlanTrainLoop runs a SIGN stage plan, but train_cfg "
                "has no stages: train_cfg = dict(type='StagePlanTrainLoop', "
                "stages=[dict(name='train', iters=N), ...]) (configs/_base_/"
                "schedules), or train_cfg = dict(type='IterBasedTrainLoop', "
                'max_iters=N) for a model without stages.')
        self.plan = StagePlan(stages)
        total = check_run_length(max_iters, self.plan)
        check_val_interval(val_interval)
        super().__init__(
            runner,
            dataloader,
            max_iters=total,
            val_interval=val_interval or total,
            **kwargs)
        self.val_at_stage_end = val_at_stage_end
        self._current: Optional[int] = None
        self._check_companion_hooks(runner)

    # -------------------------------------------------------------- checks
    @staticmethod
    def _check_companion_hooks(runner) -> None:
        have = {type(hook).__name__ for hook in runner.hooks}
        missing = {k: v for k, v in COMPANION_HOOKS.items() if v not in have}
        if missing:
            raise ValueError(
                f'StagePlanTrainLoop: the run lacks the hooks '
                f'{list(missing.values())} that check the class split, '
                '--resume and the self-training teacher; inherit a schedule '
                'from configs/_base_/schedules, or add ' +
                ', '.join(f"{k}=dict(type='{v}')"
                          for k, v in missing.items()) + ' to default_hooks.')

    def _check_wrappers(self) -> None:
        """Every stage's optimizer wrappers exist and share no parameter."""
        wrappers = getattr(self.runner.optim_wrapper, 'optim_wrappers', {})
        for i, stage in enumerate(self.plan):
            missing = [
                n for n in required_optim_wrappers(stage) if n not in wrappers
            ]
            if missing:
                raise ValueError(
                    f"train_cfg.stages[{i}] ({stage['name']}" +
                    (f", mode={stage['mode']!r}" if 'mode' in stage else '') +
                    f') needs the optimizer wrappers '
                    f'{missing}, but optim_wrapper has {list(wrappers)}; '
                    'add them to optim_wrapper (see configs/_base_/'
                    'schedules).')
            self._check_disjoint(i, stage, wrappers)

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
                            f'train_cfg.stages[{index}] ({stage["name"]}) '
                            f'steps optim_wrapper.{owner[id(p)]} and '
                            f'optim_wrapper.{name}, which both update the '
                            'same parameters; give each module to one of '
                            'them.')

    def _check_model_reads_the_plan(self) -> None:
        check_plan_fits_model(self.plan, unwrap_model(self.runner))

    def _check_first_stage(self) -> None:
        first = self.plan[0]['name']
        if first != 'train' and not (self.runner.cfg.get('load_from')
                                     or is_resuming(self.runner)):
            raise ValueError(
                f"train_cfg.stages starts with '{first}', which needs a "
                'trained backbone, SIM and G; start from the checkpoint of '
                "a 'train' stage with load_from=PATH (or put "
                "dict(name='train', iters=...) first).")

    def _respan_schedulers(self) -> None:
        """The schedulers of each optimizer wrapper span the stage that
        steps it (``begin`` / ``end``, and PolyLR's length), so a plan
        changed with ``--cfg-options train_cfg.stages.0.iters=N`` needs
        nothing else. A scheduler of a wrapper no stage uses is left as
        configured."""
        schedulers = self.runner.param_schedulers
        if not isinstance(schedulers, dict):
            return
        for index, stage in enumerate(self.plan):
            begin = self.plan.start(index)
            for name in required_optim_wrappers(stage):
                for scheduler in schedulers.get(name, []):
                    if not getattr(scheduler, 'by_epoch', False):
                        respan(scheduler, begin, begin + stage['iters'])

    # ----------------------------------------------------------------- run
    def run(self):
        """Check the plan against the built run, respan the schedulers,
        then mmengine's loop (``before_train`` hooks first)."""
        self._check_wrappers()
        self._check_first_stage()
        self._check_model_reads_the_plan()
        self._respan_schedulers()
        self._current = None
        return super().run()

    def run_iter(self, data_batch) -> None:
        self._enter_stage_at(self._iter)
        super().run_iter(data_batch)

    def _enter_stage_at(self, iteration: int) -> None:
        """Switch the model to the stage of ``iteration`` (validating the
        stage that just ended) and set its iteration within the stage."""
        index = self.plan.index_at(iteration)
        model = unwrap_model(self.runner)
        start = self.plan.start(index)
        if index != self._current:
            if self._current is not None:  # a stage just ended
                self._validate_stage_end()
                self._forget_stage_losses()
            stage = self.plan[index]
            model.set_stage(
                stage['name'], **{
                    k: v
                    for k, v in stage.items() if k not in ('name', 'iters')
                })
            print_log(
                f"SIGN stage '{stage['name']}' ({index + 1}/{len(self.plan)})"
                f": iterations {start + 1}-{start + stage['iters']}" +
                (f', resumed at {iteration + 1}'
                 if iteration > start and self._current is None else ''),
                logger='current')
            self._current = index
        model.stage_iter = iteration - start

    def _validate_stage_end(self) -> None:
        """Validate the model of the stage that just ended (mmengine's loop
        validates every ``val_interval`` iterations only)."""
        runner = self.runner
        if (not self.val_at_stage_end or runner.val_loop is None
                or self._iter < self.val_begin
                or self._iter % self.val_interval == 0):
            return
        ended = self.plan[self.plan.index_at(self._iter - 1)]['name']
        print_log(
            f"Validation at the end of stage '{ended}'", logger='current')
        runner.val_loop.run()
        runner.model.train()

    def _forget_stage_losses(self) -> None:
        """Drop the previous stage's losses from the message hub so that the
        log does not repeat their last values during the next stage."""
        scalars = self.runner.message_hub.log_scalars
        for key in list(scalars):
            if key.startswith('train/') and not key.endswith(('lr', 'time')):
                del scalars[key]
