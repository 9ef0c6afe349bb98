"""Parameter schedulers that follow the SIGN stage plan."""


def respan(scheduler, begin: int, end: int) -> None:
    """Give an mmengine parameter scheduler the span ``[begin, end)``
    as if it had been built with it. Its step count (``last_step``)
    is recounted from the steps taken so far: a scheduler built with
    ``begin=0`` took an in-span step at construction, which must not
    count in a stage that starts later (PolyLR would otherwise divide
    by zero at the stage's last iteration and MultiStepLR fire one
    step early). On a fresh run, a value its construction step set
    (e.g. LinearLR's start factor) is undone.

    Args:
        scheduler (_ParamScheduler): an mmengine parameter scheduler.
        begin (int): the first iteration of its new span.
        end (int): the iteration after its last.
    """
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
            group[name] for group in scheduler.optimizer.param_groups
        ]


def check_param_scheduler(cfg) -> None:
    """A ``param_scheduler`` dict (one list per optimizer wrapper) names
    every wrapper of ``optim_wrapper``: mmengine would stop at the first
    missing one with a bare ``KeyError``.

    Args:
        cfg (Config): the training config.

    Raises:
        ValueError: naming the missing wrappers and the fix.
    """
    schedulers = cfg.get('param_scheduler')
    optim = cfg.get('optim_wrapper')
    if not hasattr(schedulers, 'keys') or 'type' in schedulers or \
            not hasattr(optim, 'get') or 'constructor' not in optim:
        return
    wrappers = [
        k for k, v in optim.items()
        if hasattr(v, 'keys') and ('optimizer' in v or 'modules' in v)
    ]
    missing = [w for w in wrappers if w not in schedulers]
    if missing:
        raise ValueError(
            f'param_scheduler has lists for {sorted(schedulers)} but not for '
            f'the optimizer wrappers {missing} (optim_wrapper: {wrappers}): '
            'give every wrapper its list, [] for a constant learning rate, '
            'e.g. param_scheduler = dict(' +
            ', '.join(f'{w}=[]' for w in missing) + ', ...).')
