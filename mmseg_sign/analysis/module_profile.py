"""Where a training iteration's time goes, module by module.

``torch.profiler`` groups time by operator; this groups it by the module
that ran the operator, forward and backward together: each forward operator
is charged to the innermost profiled module whose ``forward`` was running
(a ``record_function`` range opened by forward hooks), and each backward
operator to the module of the forward operator it differentiates (autograd
gives both the same sequence number). What no module ran (losses computed
in a head's methods, the optimizer steps, the NaN guard) is charged to
``(no module)``, split by the ``record_function`` range around it where
there is one (``Optimizer.step#AdamW.step``).
"""
import collections
import contextlib
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn as nn
from torch.autograd import DeviceType

RANGE = 'module::'
BACKWARD = 'autograd::engine::evaluate_function: '
NO_MODULE = '(no module)'


def profiled_modules(model: nn.Module, depth: int = 2) -> Dict[str, nn.Module]:
    """The submodules named by at most ``depth`` dots-separated parts
    (``backbone``, ``neck.encoder``, ``decode_head.generator``, ...): the
    rows of :func:`module_profile`'s table; a self-training teacher (not a
    submodule) as ``teacher.backbone``, ``teacher.neck``, ..."""
    modules = {
        name: module
        for name, module in model.named_modules()
        if name and name.count('.') < depth
    }
    teacher = getattr(model, 'teacher', None)
    if isinstance(teacher, nn.Module):
        modules.update(('teacher.' + name, module)
                       for name, module in teacher.named_children())
    return modules


@contextlib.contextmanager
def module_ranges(modules: Dict[str, nn.Module]):
    """A ``record_function`` range ``module::NAME`` around every call of
    each module's ``forward`` (hooks removed on exit)."""
    handles, open_ranges = [], collections.defaultdict(list)

    def enter(name):

        def hook(module, args):
            rec = torch.profiler.record_function(RANGE + name)
            rec.__enter__()
            open_ranges[name].append(rec)

        return hook

    def leave(name):

        def hook(module, args, output):
            open_ranges[name].pop().__exit__(None, None, None)

        return hook

    for name, module in modules.items():
        handles.append(module.register_forward_pre_hook(enter(name)))
        handles.append(module.register_forward_hook(leave(name)))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _owner(event) -> str:
    """The innermost ``module::`` range above ``event`` (or None)."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith(RANGE):
            return parent.name[len(RANGE):]
        parent = parent.cpu_parent
    return None


def _root(event):
    while event.cpu_parent is not None:
        event = event.cpu_parent
    return event


def attribute(events,
              device: str = 'cpu') -> Dict[str, Dict[str, List[float]]]:
    """``{module: {operator: [forward µs, backward µs]}}`` of self time:
    CPU time, or on CUDA the time of the kernels each operator launched.

    Args:
        events: ``torch.profiler.profile(...).events()``.
        device (str): ``'cpu'`` or ``'cuda'``.
    """
    key = 'self_cpu_time_total' if device == 'cpu' else \
        'self_device_time_total'
    # the operators (a kernel's time is in its operator's self device time;
    # the kernels' own events would count it twice)
    events = [e for e in events if e.device_type == DeviceType.CPU]
    seq_owner = {}
    for e in events:  # forward operators: the module running them
        if e.sequence_nr >= 0 and not e.name.startswith(BACKWARD) and \
                not e.name.endswith('Backward0'):
            owner = _owner(e)
            if owner is not None:
                seq_owner.setdefault(e.sequence_nr, owner)
    table = collections.defaultdict(
        lambda: collections.defaultdict(lambda: [0.0, 0.0]))
    for e in events:
        if e.name.startswith(RANGE):
            continue
        root = _root(e)
        if root.name.startswith(BACKWARD):
            owner = seq_owner.get(root.sequence_nr, NO_MODULE)
            table[owner][e.name][1] += getattr(e, key)
            continue
        owner = _owner(e)
        if owner is None:
            owner = NO_MODULE if root is e else f'{NO_MODULE} {root.name}'
        table[owner][e.name][0] += getattr(e, key)
    return table


def module_profile(model: nn.Module,
                   fn: Callable[[], None],
                   iterations: int = 3,
                   depth: int = 2,
                   device: str = 'cpu') -> Dict[str, Dict[str, List[float]]]:
    """:func:`attribute` of ``iterations`` calls of ``fn`` (a training
    iteration of ``model`` on ``device``), with ranges on
    :func:`profiled_modules`."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + \
        ([ProfilerActivity.CUDA] if device == 'cuda' else [])
    with module_ranges(profiled_modules(
            model, depth)), profile(activities=activities) as prof:
        for _ in range(iterations):
            fn()
        if device == 'cuda':
            torch.cuda.synchronize()
    return attribute(prof.events(), device)


def top_operators(ops: Dict[str, List[float]],
                  n: int = 3) -> List[Tuple[str, float]]:
    """The ``n`` operators of most self time (forward + backward)."""
    totals = sorted(((sum(v), k) for k, v in ops.items()), reverse=True)
    return [(k, t) for t, k in totals[:n]]


def markdown(table: Dict[str, Dict[str, List[float]]],
             iterations: int,
             title: str,
             min_share: float = 0.01,
             n_ops: int = 3) -> str:
    """The modules of at least ``min_share`` of the time, most first: ms
    per iteration forward / backward / total, its share and top operators.
    """
    scale = 1e-3 / iterations  # µs over all iterations -> ms per iteration
    rows = []
    for module, ops in table.items():
        fwd = sum(v[0] for v in ops.values()) * scale
        bwd = sum(v[1] for v in ops.values()) * scale
        rows.append((fwd + bwd, fwd, bwd, module, ops))
    total = sum(r[0] for r in rows)
    rows.sort(key=lambda r: r[0], reverse=True)
    lines = [
        f'\n{title}: {total:.0f} ms per iteration (self time of its '
        f'operators, {iterations} iterations)', '',
        '| module | forward ms | backward ms | total ms | share | '
        'top operators (ms) |', '|---|---|---|---|---|---|'
    ]
    rest = 0.0
    for tot, fwd, bwd, module, ops in rows:
        if tot < min_share * total:
            rest += tot
            continue
        top = ', '.join(f'{k.replace("aten::", "")} {t * scale:.0f}'
                        for k, t in top_operators(ops, n_ops))
        lines.append(f'| {module} | {fwd:.0f} | {bwd:.0f} | {tot:.0f} | '
                     f'{tot / total:.0%} | {top} |')
    if rest:
        lines.append(f'| (others) | | | {rest:.0f} | {rest / total:.0%} | |')
    return '\n'.join(lines)
