"""Distributed wrapper for models that run their own multi-optimizer
``train_step`` (SIGN: up to three optimizer updates per iteration).

mmengine's ``MMDistributedDataParallel.train_step`` runs one forward and
one ``update_params`` and never calls the model's own ``train_step``;
``MMSeparateDistributedDataParallel`` (mmagic's GANs) wraps each *child
module* in its own DDP, which needs every use of a child to go through
that child's ``forward``. SIGN's optimizers do not follow the children:
C is stepped by the ``segmentor`` and by the ``discriminator`` (shared
trunk) wrappers, the head holds C, G and D, and the head's losses are
methods, not ``forward``.

So this wrapper puts one torch ``DistributedDataParallel`` around exactly
the parameters each optimizer wrapper steps (:class:`ParamGroupDDP`,
attached to the wrapper as ``optim_wrapper.grad_sync`` at the first
training step). The model computes each update's losses inside that DDP's
forward (:meth:`ZeroShotEncoderDecoder._losses_for`), so DDP's reducer
all-reduces the gradients in buckets *while* backward runs, instead of a
hand-written average after it. Parameters an update does not reach get a
zero gradient into the average (:class:`_GradAnchor`), as before.

Buffers (BN running statistics) follow rank 0 as with DDP's
``broadcast_buffers=True``: flattened, one message per dtype, once before
every training step (not once per optimizer update), so the processes
never drift apart and a resumed run equals an uninterrupted one.

Config: ``model_wrapper_cfg = dict(type='ZeroShotDataParallel')``. Works
with the gloo (CPU) and NCCL (GPU) backends.
"""
from collections import defaultdict
from typing import Callable

import torch
import torch.nn as nn
from mmengine.dist import all_reduce_params, broadcast, get_world_size
from mmengine.optim import OptimWrapper, OptimWrapperDict
# the Runner looks model wrappers up in mmengine's root registry, which does
# not search mmseg's child registry
from mmengine.registry import MODEL_WRAPPERS
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
from torch.nn.parallel import DistributedDataParallel


class _GradAnchor(torch.autograd.Function):
    """``0`` that depends on every given parameter: its backward gives each
    an undefined (no-cost) gradient, which still runs the parameter's
    gradient-accumulation hooks, so DDP's reducer sees every parameter of
    its group "ready" in every backward, reached by the loss or not."""

    @staticmethod
    def forward(ctx, *params):
        ctx.num = len(params)
        return params[0].new_zeros(())

    @staticmethod
    def backward(ctx, grad):
        return (None, ) * ctx.num


class _ParamGroup(nn.Module):
    """The parameters one optimizer steps, as a module DDP can wrap (no
    buffers: ``ZeroShotDataParallel`` broadcasts the model's once per
    step). ``forward(fn, *args)`` returns ``(fn(*args), anchor)``; the
    anchor (:class:`_GradAnchor`, value 0) is added to the loss, so that an
    update whose loss does not reach some of the group's parameters (C's
    synthetic-feature CE stepped by a wrapper that holds D alone, a batch
    without labelled pixels) still hands DDP every parameter: their
    gradients are averaged as zeros (as the hand-written average did),
    and the reducer needs no unused-parameter search
    (``find_unused_parameters=False``: no graph traversal per step, and
    no stale bookkeeping from the backward passes of other optimizers
    that share these parameters)."""

    def __init__(self, params):
        super().__init__()
        self.params = nn.ParameterList(params)

    def forward(self, fn: Callable, *args, **kwargs):
        return fn(*args, **kwargs), _GradAnchor.apply(*self.params)


class ParamGroupDDP(DistributedDataParallel):
    """``DistributedDataParallel`` over the parameters of one optimizer
    wrapper: ``ddp(fn, *args)`` runs and returns ``fn(*args)`` and makes
    the backward of the next :func:`update_params` of this wrapper
    all-reduce (average) those parameters' gradients bucket by bucket as
    they are produced."""

    def __init__(self, optim_wrapper: OptimWrapper, bucket_cap_mb=25):
        params = [
            p for group in optim_wrapper.optimizer.param_groups
            for p in group['params'] if p.requires_grad
        ]
        device = params[0].device
        super().__init__(
            _ParamGroup(params),
            device_ids=[device] if device.type == 'cuda' else None,
            find_unused_parameters=False,
            bucket_cap_mb=bucket_cap_mb)
        self.anchor = None

    def forward(self, fn: Callable, *args, **kwargs):
        out, self.anchor = super().forward(fn, *args, **kwargs)
        return out

    def pop_anchor(self, loss):
        """``loss`` + the anchor (0) of the last forward (see
        :class:`_ParamGroup`)."""
        anchor, self.anchor = self.anchor, None
        return loss if anchor is None else loss + anchor.to(loss.dtype)


@MODEL_WRAPPERS.register_module()
class ZeroShotDataParallel(nn.Module):
    """Holds ``module``; makes every process start from rank 0's weights
    and buffers; gives each optimizer wrapper a :class:`ParamGroupDDP`;
    forwards ``train_step`` / ``val_step`` / ``test_step``.

    Args:
        module (nn.Module): the model (its ``train_step`` takes an
            ``OptimWrapperDict``).
        broadcast_buffers (bool): rank 0's buffers to every process before
            each training step. Default True.
        bucket_cap_mb (float): DDP's all-reduce bucket size.
    """

    def __init__(self,
                 module: nn.Module,
                 broadcast_buffers: bool = True,
                 bucket_cap_mb: float = 25,
                 **kwargs):
        super().__init__()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.bucket_cap_mb = bucket_cap_mb
        if get_world_size() > 1:
            for tensor in list(module.parameters()) + list(module.buffers()):
                broadcast(tensor.data, src=0)

    def _broadcast_buffers(self) -> None:
        """Rank 0's buffers to every process, one message per dtype."""
        groups = defaultdict(list)
        for buf in self.module.buffers():
            groups[(buf.dtype, buf.device)].append(buf)
        for bufs in groups.values():
            flat = _flatten_dense_tensors([b.data for b in bufs])
            broadcast(flat, src=0)
            for buf, value in zip(bufs, _unflatten_dense_tensors(flat, bufs)):
                buf.data.copy_(value)

    def attach_grad_sync(self, optim_wrapper) -> None:
        """Give every wrapper of ``optim_wrapper`` (one or a dict) that
        has trainable parameters a :class:`ParamGroupDDP` as
        ``grad_sync`` (once; the same order on every rank)."""
        if optim_wrapper is None:
            return
        wrappers = optim_wrapper.values() if isinstance(
            optim_wrapper, OptimWrapperDict) else [optim_wrapper]
        for wrapper in wrappers:
            if getattr(wrapper, 'grad_sync', None) is not None:
                continue
            if any(p.requires_grad for g in wrapper.optimizer.param_groups
                   for p in g['params']):
                wrapper.grad_sync = ParamGroupDDP(wrapper, self.bucket_cap_mb)

    def train_step(self, data, optim_wrapper):
        if get_world_size() > 1:
            self.attach_grad_sync(optim_wrapper)
            if self.broadcast_buffers:
                self._broadcast_buffers()
        return self.module.train_step(data, optim_wrapper)

    def val_step(self, data):
        return self.module.val_step(data)

    def test_step(self, data):
        return self.module.test_step(data)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


def update_params(optim_wrapper: OptimWrapper, loss: torch.Tensor) -> None:
    """``OptimWrapper.update_params`` with the gradients averaged over
    processes before the step.

    In distributed training the loss is computed inside the wrapper's
    ``grad_sync`` DDP (:meth:`ZeroShotEncoderDecoder._losses_for`, attached by
    ``ZeroShotDataParallel``), whose reducer all-reduces the gradients
    while backward runs. Without one (a model stepped outside
    ``ZeroShotDataParallel``) the gradients of exactly this wrapper's
    parameters are averaged here, after backward. Either way every rank
    steps the same gradients; a parameter no rank reached gets a zero
    gradient, as one reached only elsewhere does.

    Args:
        optim_wrapper (OptimWrapper): the wrapper to step.
        loss (torch.Tensor): the scalar loss of its update.
    """
    sync = getattr(optim_wrapper, 'grad_sync', None)
    if sync is not None:
        loss = sync.pop_anchor(loss)
    loss = optim_wrapper.scale_loss(loss)
    optim_wrapper.backward(loss)
    if not optim_wrapper.should_update():
        return
    if sync is None and get_world_size() > 1:
        # DDP's reducer gave every parameter of its group an averaged
        # gradient already (its anchor reaches them all); by hand here
        grads = []
        for group in optim_wrapper.optimizer.param_groups:
            for p in group['params']:
                if p.grad is None:  # every rank must step the same list
                    p.grad = torch.zeros_like(p)
                grads.append(p.grad)
        all_reduce_params(grads, op='mean')
    optim_wrapper.step()
    optim_wrapper.zero_grad()
