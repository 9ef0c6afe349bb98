"""StagePlanTrainLoop: an iteration-based training loop as long as the SIGN
stage plan, the one home of the run's length."""
from typing import Optional

from mmengine.runner import IterBasedTrainLoop

from mmseg.registry import LOOPS
from ...structures.stage_plan import StagePlan


def check_run_length(max_iters: Optional[int], plan: StagePlan,
                     index: int = 0) -> int:
    """The run's length: the plan's; a ``train_cfg.max_iters`` given in a
    config or on the command line must agree with it.

    Args:
        max_iters (int, optional): ``train_cfg.max_iters``, if set.
        plan (StagePlan): the run's plan.
        index (int): the ``SIGNStageHook``'s place in ``custom_hooks``.

    Returns:
        int: the plan's total iterations.

    Raises:
        ValueError: ``max_iters`` differs, naming the fix.
    """
    total = plan.total_iters
    if max_iters is not None and max_iters != total:
        example = ' '.join(f'custom_hooks.{index}.stages.{i}.iters=N{i}'
                           for i in range(len(plan)))
        raise ValueError(
            f'train_cfg.max_iters={max_iters!r}: the run\'s length is set '
            f'by the SIGN stage plan custom_hooks.{index}.stages '
            f'({plan.describe()} = {total} iterations), the one home of '
            'the iteration counts (it also spans each stage\'s '
            'schedulers). Remove train_cfg.max_iters, or change the '
            f'stages\' lengths instead: --cfg-options {example}.')
    return total


def check_config_run_length(cfg) -> None:
    """A ``train_cfg.max_iters`` (in the config or ``--cfg-options``) that
    disagrees with the config's SIGN stage plan, before the Runner is
    built (the loop checks it again for every other entry point).

    Args:
        cfg (Config): the config, ``--cfg-options`` merged.

    Raises:
        ValueError: from :func:`check_run_length`.
    """
    found = StagePlan.from_config(cfg)
    if found is not None:
        train_cfg = cfg.get('train_cfg') or {}
        check_run_length(train_cfg.get('max_iters'), found[1], found[0])


@LOOPS.register_module()
class StagePlanTrainLoop(IterBasedTrainLoop):
    """mmengine's ``IterBasedTrainLoop`` whose length is the sum of the
    stages of the run's ``SIGNStageHook`` (:func:`check_run_length`):
    ``train_cfg = dict(type='StagePlanTrainLoop', val_interval=N)``.

    Args:
        runner (Runner): the runner (its ``SIGNStageHook``).
        dataloader: the training dataloader (or its config).
        max_iters (int, optional): if given, must equal the plan's length.
        **kwargs: ``IterBasedTrainLoop``'s other arguments.
    """

    def __init__(self, runner, dataloader, max_iters: Optional[int] = None,
                 **kwargs):
        plan = next((h.plan for h in runner.hooks if hasattr(h, 'plan')),
                    None)
        if plan is None:
            raise ValueError(
                'StagePlanTrainLoop runs as long as the SIGN stage plan, '
                "but the run has no SIGNStageHook: add custom_hooks=[dict("
                "type='SIGNStageHook', stages=[...])], or use "
                "train_cfg=dict(type='IterBasedTrainLoop', max_iters=N).")
        found = StagePlan.from_config(runner.cfg)
        index = found[0] if found else 0
        total = check_run_length(max_iters, plan, index)
        super().__init__(runner, dataloader, max_iters=total, **kwargs)
