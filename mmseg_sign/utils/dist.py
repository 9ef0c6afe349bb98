"""Distributed launch on machines without CUDA."""
import torch
import torch.distributed as torch_dist
from mmengine.config import Config
from mmengine.logging import print_log


def use_gloo_without_cuda(cfg: Config) -> None:
    """With ``--launcher pytorch`` on a machine without CUDA, start the
    process group with the gloo backend before the Runner is built.

    mmengine 0.10.7's ``init_dist`` calls ``torch.cuda.set_device`` and
    mmseg's runtime asks for NCCL, so ``tools/dist_train.sh CONFIG 2``
    would fail on CPUs. The Runner skips its own initialisation when a
    process group exists. Does nothing with a GPU or without a launcher.

    Args:
        cfg (Config): the config (its ``launcher`` and ``env_cfg``).
    """
    if cfg.get('launcher', 'none') == 'none' or torch.cuda.is_available():
        return
    if cfg.launcher != 'pytorch':
        raise RuntimeError(
            f'--launcher {cfg.launcher} without CUDA is not supported; use '
            '--launcher pytorch (tools/dist_train.sh) for CPU processes.')
    dist_cfg = cfg.setdefault('env_cfg', {}).setdefault('dist_cfg', {})
    dist_cfg['backend'] = 'gloo'
    if not torch_dist.is_initialized():
        torch_dist.init_process_group(backend='gloo')
    print_log(
        'No CUDA device: distributed training on CPU processes with the '
        f'gloo backend (world size {torch_dist.get_world_size()}).',
        logger='current')
