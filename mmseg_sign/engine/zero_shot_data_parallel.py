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

Config: ``model_wrapper_cfg = dict(type='ZeroShotDataParallel')``.
"""
import torch.nn as nn
from mmengine.dist import broadcast
# the Runner looks model wrappers up in mmengine's root registry, which does
# not search mmseg's child registry
from mmengine.registry import MODEL_WRAPPERS


@MODEL_WRAPPERS.register_module()
class ZeroShotDataParallel(nn.Module):
    """Holds ``module``; makes every process start from rank 0's weights
    and buffers; forwards ``train_step`` / ``val_step`` / ``test_step``."""

    def __init__(self, module: nn.Module, **kwargs):
        super().__init__()
        self.module = module
        for tensor in list(module.parameters()) + list(module.buffers()):
            broadcast(tensor.data, src=0)

    def train_step(self, data, optim_wrapper):
        return self.module.train_step(data, optim_wrapper)

    def val_step(self, data):
        return self.module.val_step(data)

    def test_step(self, data):
        return self.module.test_step(data)

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)
