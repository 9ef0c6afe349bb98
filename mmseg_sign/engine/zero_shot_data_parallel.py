"""Distributed wrapper for models that run their own multi-optimizer
``train_step`` (see the explanation below).

mmengine's ``MMDistributedDataParallel.train_step`` runs the wrapped
model's forward and one ``update_params`` and never calls the model's own
``train_step``; and DDP only averages gradients of a backward that follows
its own ``forward``. SIGN does three backward passes with three optimizers
per iteration, so this wrapper calls ``module.train_step`` and the model
averages each optimizer's gradients itself
(:func:`mmseg_sign.models.segmentors.zero_shot_encoder_decoder.update_params`).
It works with the gloo (CPU) and NCCL (GPU) backends.

Like DDP (``broadcast_buffers=True``), rank 0's buffers (BN running
statistics) are broadcast before every training step, so the processes
never drift apart (without it a resumed run, which loads rank 0's
statistics on every process, would differ from the uninterrupted one).

Config: ``model_wrapper_cfg = dict(type='ZeroShotDataParallel')``.
"""
from collections import defaultdict

import torch.nn as nn
from mmengine.dist import broadcast, get_world_size
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors
# the Runner looks model wrappers up in mmengine's root registry, which does
# not search mmseg's child registry
from mmengine.registry import MODEL_WRAPPERS


@MODEL_WRAPPERS.register_module()
class ZeroShotDataParallel(nn.Module):
    """Holds ``module``; makes every process start from rank 0's weights
    and buffers; forwards ``train_step`` / ``val_step`` / ``test_step``."""

    def __init__(self, module: nn.Module, broadcast_buffers: bool = True,
                 **kwargs):
        super().__init__()
        self.module = module
        self.broadcast_buffers = broadcast_buffers
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

    def train_step(self, data, optim_wrapper):
        if self.broadcast_buffers and get_world_size() > 1:
            self._broadcast_buffers()
        return self.module.train_step(data, optim_wrapper)

    def val_step(self, data):
        return self.module.val_step(data)

    def test_step(self, data):
        return self.module.test_step(data)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)
