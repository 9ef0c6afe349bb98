"""``--amp`` for one optimizer wrapper or a dict of them."""
import torch
from mmengine.config import Config


def _is_single_wrapper(cfg: dict) -> bool:
    return 'optimizer' in cfg or 'type' in cfg


def enable_amp(cfg: Config) -> bool:
    """``--amp``: check for a GPU, then :func:`convert_to_amp`.

    Raises:
        RuntimeError: no CUDA device is available (mmengine's AMP wrapper
            needs one).
    """
    if not torch.cuda.is_available():
        raise RuntimeError(
            '--amp needs a CUDA GPU, but torch.cuda.is_available() is False '
            f'(torch {torch.__version__}). Drop --amp to train in fp32 on '
            'the CPU, or install a CUDA build of torch and mmcv (README, '
            '"GPU users").')
    return convert_to_amp(cfg)


def convert_to_amp(cfg: Config) -> bool:
    """Turn every optimizer wrapper of ``cfg.optim_wrapper`` into an
    ``AmpOptimWrapper`` with a dynamic loss scale.

    ``cfg.optim_wrapper`` is either one wrapper config (``type`` /
    ``optimizer`` keys) or a dict of them built by a multi-optimizer
    ``constructor`` (an ``OptimWrapperDict``). Returns whether anything
    changed (False when every wrapper already uses AMP).

    Raises:
        ValueError: a wrapper type that AMP cannot replace.
    """
    optim_wrapper = cfg.optim_wrapper
    if _is_single_wrapper(optim_wrapper):
        wrappers = {'optim_wrapper': optim_wrapper}
    else:
        wrappers = {
            name: sub
            for name, sub in optim_wrapper.items()
            if isinstance(sub, dict) and _is_single_wrapper(sub)
        }
        if not wrappers:
            raise ValueError('--amp: found no optimizer wrapper in '
                             f'cfg.optim_wrapper = {optim_wrapper}.')
    changed = False
    for name, wrapper in wrappers.items():
        wrapper_type = wrapper.get('type', 'OptimWrapper')
        if wrapper_type == 'AmpOptimWrapper':
            continue
        if wrapper_type != 'OptimWrapper':
            raise ValueError(
                f'--amp can only replace `OptimWrapper`, but {name} uses '
                f'{wrapper_type}; set its type to AmpOptimWrapper yourself.')
        wrapper['type'] = 'AmpOptimWrapper'
        wrapper['loss_scale'] = 'dynamic'
        changed = True
    return changed
