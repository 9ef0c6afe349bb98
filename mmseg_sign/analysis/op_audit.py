"""Every ATen operator one step of each SIGN stage calls (forward and
backward, every optimizer update of the step), counted and sorted into the
kinds whose CUDA kernel can behave otherwise than the CPU's: the audit of
docs/gpu.md, and the operator counts of docs/benchmark.md.

Runs on a CPU: the operators are the same on a GPU, except the kernel
each one dispatches to (the concern named per kind).
"""
from collections import Counter
from typing import Dict, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .parity import placed_model, record_step

#: (kind, what to check on a GPU, operator name prefixes)
KINDS = [
    ('random', 'CUDA draws from its Philox generator: same distribution, '
     'other numbers; pinned by the parity harness',
     ('normal', 'randn', 'rand', 'randperm', 'multinomial', 'bernoulli',
      'native_dropout', 'uniform', 'exponential', 'randint')),
    ('order', 'result order and ties may differ between kernels',
     ('unique', '_unique', 'sort', 'topk', 'argsort', 'kthvalue', 'median',
      'mode', 'nonzero', 'argmax', 'argmin', 'max.dim', 'min.dim')),
    ('atomic', 'CUDA accumulates with atomics: summation order varies',
     ('index_put', 'index_add', 'scatter', 'embedding_dense_backward',
      'upsample_bilinear2d_backward', 'upsample_nearest2d_backward',
      'max_pool2d_with_indices_backward', 'index_reduce', 'put_', 'bincount',
      'histc')),
    ('distance', 'a device- and size-dependent kernel',
     ('_cdist', 'cdist', '_euclidean_dist', 'pdist')),
    ('attention', 'kernel choice: CPU flash vs CUDA memory-efficient '
     '(float32) / flash / cuDNN (half)', ('_scaled_dot_product', '_flash',
                                          '_efficient_attention')),
    ('convolution', 'cuDNN: TF32 by default in float32, algorithm picked '
     'by cudnn.benchmark', ('convolution', 'cudnn_convolution',
                            'convolution_backward', '_convolution')),
    ('normalisation', 'cuDNN / CUDA batch and group norm',
     ('native_batch_norm', 'cudnn_batch_norm', 'native_group_norm',
      '_native_batch_norm')),
    ('matmul', 'cuBLAS; TF32 only if allowed (off by default)',
     ('mm', 'addmm', 'bmm', 'matmul', 'baddbmm')),
]


class OpCounter(TorchDispatchMode):
    """Counts the ATen operators called inside it (``counts``)."""

    def __init__(self):
        super().__init__()
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[str(func.overloadpacket.__name__) +
                    ('' if func._overloadname ==
                     'default' else f'.{func._overloadname}')] += 1
        return func(*args, **(kwargs or {}))


def kind_of(op: str) -> str:
    """The :data:`KINDS` entry of operator ``op`` (``'other'``: an
    element-wise or reduction kernel that computes the same thing on
    every device up to rounding).

    Args:
        op (str): an ATen name, e.g. ``'topk'`` or ``'max.dim'``.

    Returns:
        str: the kind.
    """
    base = op.split('.')[0]
    for kind, _, prefixes in KINDS:
        for prefix in prefixes:
            if '.' in prefix and op.startswith(prefix):
                return kind
            if '.' not in prefix and (
                    base == prefix or base.startswith(prefix)
                    and not base[len(prefix):len(prefix) + 1].isalpha()):
                return kind
    return 'other'


def step_operators(cfg,
                   state_dict: dict,
                   batch: dict,
                   steps: Sequence[tuple],
                   seed: int = 0) -> Dict[str, Counter]:
    """``{step label: Counter(operator: calls)}`` of one step of each of
    ``steps`` (:func:`~mmseg_sign.analysis.parity.plan_steps`) on the CPU in
    float32, the optimizer steps recorded, not run.

    Args:
        cfg (Config): the run's config.
        state_dict (dict): the fixed weights.
        batch (dict): :func:`~mmseg_sign.analysis.parity.fixed_batch`'s.
        steps (Sequence[tuple]): the steps.
        seed (int): the pinned draws' seed.

    Returns:
        dict: the counts per step.
    """
    model, wrappers, inputs, samples = placed_model(cfg, state_dict, batch,
                                                    'cpu', torch.float32)
    out = {}
    for label, stage, opts, stage_iter in steps:
        with OpCounter() as counter:
            record_step(model, wrappers, label, stage, opts, stage_iter,
                        inputs, samples)
        out[label] = counter.counts
    return out


def audit_table(counts: Dict[str, Counter]) -> str:
    """Markdown: per kind, each operator with its calls in every step."""
    labels = list(counts)
    ops = sorted({op for c in counts.values() for op in c})
    lines = [
        '| kind | operator | ' + ' | '.join(labels) + ' |',
        '|---|---|' + '---|' * len(labels)
    ]
    for kind, concern, _ in KINDS + [('other', '', ())]:
        mine = [op for op in ops if kind_of(op) == kind]
        for op in mine:
            lines.append(f'| {kind} | `{op}` | ' +
                         ' | '.join(str(counts[s][op] or '')
                                    for s in labels) + ' |')
    lines.append('| **all** | calls | ' +
                 ' | '.join(str(sum(counts[s].values()))
                            for s in labels) + ' |')
    return '\n'.join(lines)


def count_iteration(fn) -> tuple:
    """ATen operator calls and FLOPs (``torch.utils.flop_counter``: matrix
    products and convolutions, forward and backward) of one call of
    ``fn``.

    Args:
        fn (Callable): one training iteration.

    Returns:
        tuple: ``(operator calls, FLOPs)``.
    """
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as flops, OpCounter() as ops:
        fn()
    return sum(ops.counts.values()), flops.get_total_flops()


def use_foreach(*wrappers) -> None:
    """Make every optimizer of ``wrappers`` (``OptimWrapper`` or
    ``OptimWrapperDict``) step with torch's foreach kernels (one kernel per
    operation for all parameters; torch's default on a GPU, while a CPU
    steps parameter by parameter).

    Args:
        *wrappers: optimizer wrappers.
    """
    for wrapper in wrappers:
        inner = getattr(wrapper, 'optim_wrappers', None)
        for each in (inner.values() if inner else [wrapper]):
            for group in each.optimizer.param_groups:
                if 'foreach' in group:
                    group['foreach'] = True


def print_counts(counts: dict) -> None:
    """The operator calls and FLOPs of each training iteration, each as a
    ratio to the baseline's (the first row)."""
    (_, (base_ops, base_flops)), = list(counts.items())[:1]
    print('| training iteration | ATen operator calls | × baseline | '
          'GFLOPs (fwd + bwd) | × baseline |\n|---|---|---|---|---|')
    for name, (ops, flops) in counts.items():
        print(f'| {name} | {ops} | {ops / base_ops:.2f} | {flops / 1e9:.2f} '
              f'| {flops / max(base_flops, 1):.2f} |')
