"""``--amp`` for one optimizer wrapper or a dict of them, on any device."""
from typing import Optional

import torch
from mmengine.config import Config

AMP_WRAPPER = 'MixedPrecisionOptimWrapper'


def _is_single_wrapper(cfg: dict) -> bool:
    return 'optimizer' in cfg or 'type' in cfg


def training_device() -> str:
    """The device the Runner trains on: ``cuda`` when torch sees a GPU,
    else ``cpu``."""
    return 'cuda' if torch.cuda.is_available() else 'cpu'


def enable_amp(cfg: Config, dtype: Optional[str] = None,
               device: Optional[str] = None) -> bool:
    """``--amp [--amp-dtype DTYPE]``: check ``dtype`` on the training device
    before anything is built (bfloat16 on hardware without it is an error,
    float16 on a CPU a warning; default: float16 on a GPU, bfloat16 on a
    CPU), then :func:`convert_to_amp`.

    Raises:
        ValueError, RuntimeError: from ``check_amp_dtype``.

    Args:
        cfg (Config): the training config (changed in place).
        dtype (str, optional): ``'float16'`` or ``'bfloat16'``.
        device (str, optional): ``'cuda'`` or ``'cpu'`` (default: the
            machine's).

    Returns:
        bool: whether a wrapper changed.
    """
    from mmseg_sign.engine.optim_wrappers import check_amp_dtype
    device = device or training_device()
    for name, explicit in _explicit_dtypes(cfg).items():
        check_amp_dtype(device, explicit)  # the config's own, on this device
    default = check_amp_dtype(device, dtype)
    return convert_to_amp(cfg, dtype, default=default)


def _explicit_dtypes(cfg: Config) -> dict:
    """``{wrapper: dtype}`` of the mixed-precision wrappers of
    ``cfg.optim_wrapper`` that name their dtype."""
    optim_wrapper = cfg.optim_wrapper
    wrappers = {'optim_wrapper': optim_wrapper} if _is_single_wrapper(
        optim_wrapper) else {n: w for n, w in optim_wrapper.items()
                             if isinstance(w, dict)}
    return {n: w['dtype'] for n, w in wrappers.items()
            if w.get('type') in ('AmpOptimWrapper', AMP_WRAPPER) and
            w.get('dtype') is not None}


def convert_to_amp(cfg: Config, dtype: Optional[str] = None,
                   default: Optional[str] = None) -> bool:
    """Turn every optimizer wrapper of ``cfg.optim_wrapper`` into a
    ``MixedPrecisionOptimWrapper`` (autocast to ``dtype``; float16 with a
    dynamic loss scale per wrapper).

    ``cfg.optim_wrapper`` is either one wrapper config (``type`` /
    ``optimizer`` keys) or a dict of them built by a multi-optimizer
    ``constructor`` (an ``OptimWrapperDict``). A wrapper that already is an
    ``AmpOptimWrapper`` / ``MixedPrecisionOptimWrapper`` keeps its settings,
    its ``dtype`` included: precision is what the config wrote (a ``dtype``
    given here that differs from it is an error, never a silent
    replacement). Returns whether anything changed.

    Raises:
        ValueError: a wrapper type that AMP cannot replace, or ``dtype``
            against a wrapper's own.

    Args:
        cfg (Config): the training config (changed in place).
        dtype (str, optional): the autocast dtype the user asked for
            (``--amp-dtype``).
        default (str, optional): the dtype of wrappers that name none when
            ``dtype`` is not given (``--amp``: the device's default).
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
        if wrapper_type in ('AmpOptimWrapper', AMP_WRAPPER):
            if wrapper_type != AMP_WRAPPER:
                wrapper['type'] = AMP_WRAPPER  # runs on a CPU too
            own = wrapper.get('dtype')
            if own is not None and dtype is not None and own != dtype:
                raise ValueError(
                    f'--amp-dtype {dtype}, but the config sets '
                    f'optim_wrapper {name} to dtype={own!r}: precision is '
                    'what the config says; drop --amp-dtype, or change the '
                    f"config (--cfg-options optim_wrapper.{name}.dtype="
                    f'{dtype}).')
            if own is None and (dtype or default) is not None:
                wrapper['dtype'] = dtype or default
                changed = True
            continue
        if wrapper_type != 'OptimWrapper':
            raise ValueError(
                f'--amp can only replace `OptimWrapper`, but {name} uses '
                f'{wrapper_type}; set its type to {AMP_WRAPPER} yourself.')
        wrapper['type'] = AMP_WRAPPER
        wrapper['loss_scale'] = 'dynamic'
        if (dtype or default) is not None:
            wrapper['dtype'] = dtype or default
        changed = True
    return changed
