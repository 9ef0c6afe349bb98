"""``--amp`` for one optimizer wrapper or a dict of them, on any device."""
from typing import Optional

import torch
from mmengine.config import Config

from .optim_wrappers import check_amp_dtype

AMP_WRAPPER = 'MixedPrecisionOptimWrapper'

#: the names a config may give a mixed-precision wrapper
AMP_TYPES = ('AmpOptimWrapper', AMP_WRAPPER)


def wrapper_configs(optim_wrapper: dict) -> dict:
    """``{name: wrapper config}`` in ``cfg.optim_wrapper``: the one wrapper
    (``optimizer`` / ``type`` keys), or the entries of a dict of them built
    by a multi-optimizer ``constructor``; such a dict's own ``type``,
    ``dtype`` and ``loss_scale`` are the run's wrapper type
    (``ModuleGroupOptimWrapperConstructor``), not an entry.

    Args:
        optim_wrapper (dict): ``cfg.optim_wrapper``.

    Returns:
        dict: the wrapper configs (the same objects, changed in place by
        :func:`convert_wrappers`).
    """
    if 'optimizer' in optim_wrapper:
        return {'optim_wrapper': optim_wrapper}
    entries = {
        name: sub
        for name, sub in optim_wrapper.items() if isinstance(sub, dict) and (
            'optimizer' in sub or 'type' in sub or 'modules' in sub)
    }
    if entries or 'type' not in optim_wrapper:
        return entries
    return {'optim_wrapper': optim_wrapper}


def training_device() -> str:
    """The device the Runner trains on: ``cuda`` when torch sees a GPU,
    else ``cpu``."""
    return 'cuda' if torch.cuda.is_available() else 'cpu'


def enable_amp(cfg: Config,
               dtype: Optional[str] = None,
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
    device = device or training_device()
    for name, explicit in _explicit_dtypes(cfg).items():
        check_amp_dtype(device, explicit)  # the config's own, on this device
    default = check_amp_dtype(device, dtype)
    return convert_to_amp(cfg, dtype, default=default)


def _explicit_dtypes(cfg: Config) -> dict:
    """``{wrapper: dtype}`` of the mixed-precision wrappers of
    ``cfg.optim_wrapper`` that name their dtype."""
    return {
        n: w['dtype']
        for n, w in _amp_configs(cfg.optim_wrapper).items()
        if w.get('type') in AMP_TYPES and w.get('dtype') is not None
    }


def _amp_configs(optim_wrapper: dict) -> dict:
    """:func:`wrapper_configs`, and a dict of wrappers itself when its own
    type is mixed precision (its ``dtype`` is its entries' default)."""
    wrappers = wrapper_configs(optim_wrapper)
    if 'optim_wrapper' not in wrappers and \
            optim_wrapper.get('type') in AMP_TYPES:
        wrappers = dict(optim_wrapper=optim_wrapper, **wrappers)
    return wrappers


def convert_to_amp(cfg: Config,
                   dtype: Optional[str] = None,
                   default: Optional[str] = None) -> bool:
    """Turn every optimizer wrapper of ``cfg.optim_wrapper`` into a
    ``MixedPrecisionOptimWrapper`` (autocast to ``dtype``; float16 with a
    dynamic loss scale per wrapper): :func:`convert_wrappers` on
    :func:`wrapper_configs`.

    Raises:
        ValueError: no wrapper found, a wrapper type that AMP cannot
            replace, or ``dtype`` against a wrapper's own.

    Args:
        cfg (Config): the training config (changed in place).
        dtype (str, optional): the autocast dtype the user asked for
            (``--amp-dtype``).
        default (str, optional): the dtype of wrappers that name none when
            ``dtype`` is not given (``--amp``: the device's default).

    Returns:
        bool: whether anything changed.
    """
    wrappers = _amp_configs(cfg.optim_wrapper)
    if not wrappers:
        raise ValueError('--amp: found no optimizer wrapper in '
                         f'cfg.optim_wrapper = {cfg.optim_wrapper}.')
    return convert_wrappers(wrappers, dtype, default)


def convert_wrappers(wrappers: dict,
                     dtype: Optional[str] = None,
                     default: Optional[str] = None,
                     loss_scale='dynamic',
                     asked_by: str = '--amp-dtype') -> bool:
    """Make each wrapper config of ``wrappers`` a
    ``MixedPrecisionOptimWrapper``, in place.

    A wrapper that already is an ``AmpOptimWrapper`` /
    ``MixedPrecisionOptimWrapper`` keeps its settings, its ``dtype``
    included: precision is what the config wrote (a ``dtype`` given here
    that differs from it is an error, never a silent replacement).

    Args:
        wrappers (dict): ``{name: wrapper config}``.
        dtype (str, optional): the autocast dtype asked for.
        default (str, optional): the dtype of wrappers that name none when
            ``dtype`` is not given (None: the device's, when built).
        loss_scale: of the converted wrappers (float16 only).
        asked_by (str): who asks for ``dtype``, for the error message
            (``--amp-dtype``, ``optim_wrapper.dtype``).

    Raises:
        ValueError: a wrapper type that AMP cannot replace, or ``dtype``
            against a wrapper's own.

    Returns:
        bool: whether anything changed.
    """
    changed = False
    for name, wrapper in wrappers.items():
        wrapper_type = wrapper.get('type', 'OptimWrapper')
        if wrapper_type in AMP_TYPES:
            if wrapper_type != AMP_WRAPPER:
                wrapper['type'] = AMP_WRAPPER  # runs on a CPU too
            own = wrapper.get('dtype')
            if own is not None and dtype is not None and own != dtype:
                key = 'optim_wrapper' + ('' if name == 'optim_wrapper' else
                                         f'.{name}')
                raise ValueError(
                    f'{asked_by} {dtype}, but the config sets '
                    f'{key}.dtype={own!r}: precision is what the config '
                    f'says; drop {asked_by}, or change the config '
                    f'(--cfg-options {key}.dtype={dtype}).')
            if own is None and (dtype or default) is not None:
                wrapper['dtype'] = dtype or default
                changed = True
            continue
        if wrapper_type != 'OptimWrapper':
            raise ValueError(
                f'--amp can only replace `OptimWrapper`, but {name} uses '
                f'{wrapper_type}; set its type to {AMP_WRAPPER} yourself.')
        wrapper['type'] = AMP_WRAPPER
        wrapper['loss_scale'] = loss_scale
        if (dtype or default) is not None:
            wrapper['dtype'] = dtype or default
        changed = True
    return changed
