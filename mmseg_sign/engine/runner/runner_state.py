"""What a hook may ask of the runner, through its public attributes."""
from mmengine.model import is_model_wrapper
from mmengine.optim import OptimWrapper


def is_training(runner) -> bool:
    """Whether ``runner`` is in ``runner.train()``.

    Args:
        runner (Runner): the runner.

    Returns:
        bool: its optimizer wrappers are built (not ``tools/test.py`` /
        ``init_model``).
    """
    return isinstance(runner.optim_wrapper, OptimWrapper)


def is_resuming(runner) -> bool:
    """Whether the run resumes a checkpoint.

    Args:
        runner (Runner): the runner.

    Returns:
        bool: ``--resume`` / ``resume=True`` (not ``load_from``).
    """
    return bool(runner.cfg.get('resume', False))


def unwrap_model(runner):
    """The model a runner trains.

    Args:
        runner (Runner): the runner.

    Returns:
        nn.Module: ``runner.model`` without its DDP /
        ``ZeroShotDataParallel`` wrapper.
    """
    model = runner.model
    return model.module if is_model_wrapper(model) else model


def stage_plan(runner):
    """The SIGN stage plan of a training run.

    Args:
        runner (Runner): the runner, in ``runner.train()`` (its training
            loop is built).

    Returns:
        StagePlan | None: ``runner.train_loop.plan`` (``StagePlanTrainLoop``,
        which parsed ``train_cfg.stages``); ``None`` for a loop without
        one (e.g. SPNet's ``IterBasedTrainLoop``).
    """
    return getattr(runner.train_loop, 'plan', None)
