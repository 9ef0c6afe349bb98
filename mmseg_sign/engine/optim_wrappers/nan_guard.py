"""The NaN guard: training stops at the first non-finite loss or weight,
naming the optimizer wrapper, the loss terms and the likely causes
(``ZeroShotEncoderDecoder`` checks after every update)."""
import math
from typing import Dict

import torch
from mmengine.logging import MessageHub
from mmengine.optim import OptimWrapper

NAN_HINT = (
    'Usual causes: a learning rate too high for the optimizer that steps '
    'these losses (optim_wrapper.<name>.optimizer.lr); a class-embedding '
    'table with a large scale (rows should be L2-normalised, as '
    'tools/build_class_embeddings.py writes them); in mixed precision '
    '(--amp, AmpOptimWrapper / MixedPrecisionOptimWrapper), float16 '
    'overflow in the forward pass (the loss scale only guards the '
    'gradients; try --amp-dtype bfloat16).')


def _l1_norms(tensors: list) -> list:
    """Per-tensor L1 norms (one fused kernel where torch has it). A sum
    propagates NaN and inf, so a norm is finite iff every element is (up
    to an overflow of the sum itself, ~3e38 in float32)."""
    foreach_norm = getattr(torch, '_foreach_norm', None)
    if foreach_norm is not None:
        try:
            return list(foreach_norm(tensors, 1))
        except (RuntimeError, TypeError):  # e.g. mixed devices or dtypes
            pass
    return [torch.linalg.vector_norm(t, 1) for t in tensors]


def check_finite_update(model: torch.nn.Module, optim_wrapper: OptimWrapper,
                        log_vars: Dict[str, torch.Tensor]) -> None:
    """NaN guard, run by ``ZeroShotEncoderDecoder._update`` after each
    optimizer update: raise ``FloatingPointError`` when a loss term (a
    ``log_vars`` key holding ``'loss'``, the total included) is NaN or
    infinite, or when the step wrote NaN / inf into the weights of
    ``optim_wrapper`` (finite losses whose gradients overflowed).

    Raised inside ``train_step``, the error stops the run before
    ``CheckpointHook`` can save the iteration, so no non-finite checkpoint
    is written. The check costs one device-to-host sync per update (the
    loss terms and one L1 norm per weight tensor, stacked); the culprits
    are looked up only on failure. A non-finite *gradient* alone is no
    error: ``AmpOptimWrapper``'s loss scaler skips such steps (the weights
    stay finite) and lowers its scale. Checking after the step (not before
    the backward pass) also keeps processes in step: gradients are
    averaged over processes, so every rank sees the non-finite weights of
    a step one rank's loss spoiled, and all of them stop together.

    Args:
        model (nn.Module): the segmentor.
        optim_wrapper (OptimWrapper): the wrapper that just stepped.
        log_vars (dict[str, Tensor]): the update's loss terms.

    Raises:
        FloatingPointError: naming the non-finite losses or weights.
    """
    names = [k for k in log_vars if 'loss' in k]
    params = [
        p for group in optim_wrapper.optimizer.param_groups
        for p in group['params']
    ]
    if not names and not params:
        return
    device = (log_vars[names[0]] if names else params[0]).device
    with torch.no_grad():  # reads only: no detach() per tensor
        values = [log_vars[k].float().reshape(()) for k in names]
        if params:
            values.append(
                torch.stack([n.float().to(device)
                             for n in _l1_norms(params)]).sum())
        values = torch.stack(values)
    if bool(values.isfinite().all()):
        return
    values = values.tolist()
    losses = dict(zip(names, values))
    hub = MessageHub.get_current_instance()
    where = (f'SIGN stage {model.stage!r}, iteration {model.stage_iter + 1}'
             ' of the stage')
    global_iter = hub.get_info('iter')
    if hub.get_info('loop_stage') == 'train' and global_iter is not None:
        where += f' (iteration {global_iter + 1} of the run)'
    bad = [
        k for k, v in losses.items() if k != 'loss' and not math.isfinite(v)
    ]
    terms = ', '.join(f'{k} = {v:.4g}' for k, v in losses.items()
                      if k != 'loss')
    if bad:
        what = (f'Non-finite loss in {where}: ' +
                ', '.join(f'{k} = {losses[k]}' for k in bad))
    elif 'loss' in losses and not math.isfinite(losses['loss']):
        what = (f'Non-finite loss in {where}: the total loss overflowed to '
                f"{losses['loss']} (its terms: {terms})")
    else:
        param_names = {id(p): n for n, p in model.named_parameters()}
        spoiled = [
            param_names.get(id(p), '?') for p in params
            if not bool(p.detach().isfinite().all())
        ]
        shown = ', '.join(spoiled[:3]) + (f' and {len(spoiled) - 3} more'
                                          if len(spoiled) > 3 else '')
        what = (f'Non-finite weights after the optimizer step in {where}: '
                f'the losses of this step were finite ({terms}) but their '
                f'gradients overflowed (or were non-finite in another '
                f'process) and the step wrote NaN/inf into {len(spoiled)} '
                f'parameter tensor(s): {shown}')
    raise FloatingPointError(
        f'{what}. Training stopped; no checkpoint of this iteration is '
        f'written. {NAN_HINT}')
