"""Mixed precision on every device: ``torch.autocast`` and
``torch.amp.GradScaler`` on a CPU as on a GPU, as one subclass of mmengine's
``AmpOptimWrapper`` (which refuses to build without a GPU and whose
``autocast`` takes only bfloat16 on a CPU).

One loss scaler per optimizer wrapper (mmengine's ``OptimWrapperDict`` of
``AmpOptimWrapper`` does the same): SIGN steps its wrappers one after the
other, each after a backward pass of its own losses (segmentor, then G, then
D + C; docs/reproduction.md), so a gradient overflow in one wrapper skips
that wrapper's step and halves that wrapper's scale only; the others step
as usual and keep their scales. Every scaler is saved in the checkpoint
under its wrapper's name, so ``--resume`` restores all of them.
"""
import logging
from contextlib import contextmanager
from typing import Optional, Union

import torch
from mmengine.logging import print_log
from mmengine.optim import AmpOptimWrapper, OptimWrapper
from mmseg.registry import OPTIM_WRAPPERS

#: the autocast dtypes ``--amp-dtype`` offers
AMP_DTYPES = ('float16', 'bfloat16')
_LOGGED = set()  # (device, dtype) pairs already named in the log
_WARNED = set()  # ... and warned about


def default_amp_dtype(device_type: str) -> str:
    """float16 on a GPU (tensor cores, the mmseg default), bfloat16 on a CPU
    (fast with AVX-512 BF16 / AMX; float16 CPU kernels are slow).

    Args:
        device_type (str): ``'cuda'`` or ``'cpu'``.

    Returns:
        str: ``'float16'`` or ``'bfloat16'``.
    """
    return 'float16' if device_type == 'cuda' else 'bfloat16'


def cpu_supports_bf16() -> bool:
    """Whether oneDNN has bfloat16 kernels for this CPU (AVX-512 and up);
    without them bfloat16 autocast falls back to slow reference code."""
    probe = getattr(torch.ops.mkldnn, '_is_mkldnn_bf16_supported', None)
    return bool(probe()) if probe is not None else False


def _dtype_name(dtype: Union[str, torch.dtype, None]) -> Optional[str]:
    if isinstance(dtype, torch.dtype):
        dtype = str(dtype).replace('torch.', '')
    return {
        'fp16': 'float16',
        'half': 'float16',
        'bf16': 'bfloat16'
    }.get(dtype, dtype)


def check_amp_dtype(device_type: str, dtype: Union[str, torch.dtype,
                                                   None]) -> str:
    """The autocast dtype for ``device_type`` (``dtype``, or the device's
    default when None), checked before training starts.

    Args:
        device_type (str): ``'cuda'`` or ``'cpu'``.
        dtype (str | torch.dtype, optional): the wanted dtype.

    Raises:
        ValueError: ``dtype`` is not one of :data:`AMP_DTYPES`, or the
            device is neither ``cpu`` nor ``cuda``.
        RuntimeError: bfloat16 on a GPU without bfloat16 arithmetic.
    Warns (log, once) where it runs slowly: float16 on a CPU, bfloat16 on a
    CPU without bfloat16 kernels.
    """
    if device_type not in ('cpu', 'cuda'):
        raise ValueError(f'Mixed precision runs on cpu or cuda, got the '
                         f'device {device_type!r}.')
    name = _dtype_name(dtype) or default_amp_dtype(device_type)
    if name not in AMP_DTYPES:
        raise ValueError(f'The mixed-precision dtype must be one of '
                         f'{AMP_DTYPES}, got {dtype!r} (--amp-dtype, or the '
                         "optimizer wrapper's dtype).")
    if name == 'bfloat16':
        if device_type == 'cuda' and \
                not torch.cuda.is_bf16_supported(including_emulation=False):
            major, minor = torch.cuda.get_device_capability()
            raise RuntimeError(
                f'--amp-dtype bfloat16: this GPU '
                f'({torch.cuda.get_device_name()}, compute capability '
                f'{major}.{minor}) has no bfloat16 arithmetic (it needs 8.0, '
                'Ampere, or newer). Use --amp-dtype float16, or train in '
                'fp32 without --amp.')
        if device_type == 'cpu' and not cpu_supports_bf16() and \
                ('cpu', name) not in _WARNED:
            _WARNED.add(('cpu', name))
            print_log(
                'bfloat16 autocast on this CPU: it has no bfloat16 kernels '
                '(oneDNN needs AVX-512; torch.ops.mkldnn.'
                '_is_mkldnn_bf16_supported() is False), so convolutions run '
                'on reference code, 30-150x slower than fp32 (measured on an '
                'AVX2 CPU). Training runs, but slowly: drop --amp to train '
                'in fp32 here.',
                logger='current',
                level=logging.WARNING)
    elif device_type == 'cpu' and ('cpu', name) not in _WARNED:
        _WARNED.add(('cpu', name))
        fast = ('--amp-dtype bfloat16 (the CPU default) is the fast choice '
                'on this CPU' if cpu_supports_bf16() else 'this CPU has no '
                'bfloat16 kernels either: drop --amp to train in fp32')
        print_log(
            'float16 autocast on a CPU is slow (its CPU kernels are reference '
            f'code, many times slower than fp32); it runs, but {fast}.',
            logger='current',
            level=logging.WARNING)
    return name


def _device_of(optimizer: torch.optim.Optimizer) -> str:
    for group in optimizer.param_groups:
        for param in group['params']:
            return param.device.type
    return 'cuda' if torch.cuda.is_available() else 'cpu'


@OPTIM_WRAPPERS.register_module()
class MixedPrecisionOptimWrapper(AmpOptimWrapper):
    """``AmpOptimWrapper`` on any device: ``torch.autocast(device, dtype)``
    around the forward pass (:meth:`optim_context`) and, for float16, a
    ``torch.amp.GradScaler(device)``; bfloat16 has float32's exponent range
    and needs no loss scale (``loss_scaler`` is None).

    ``tools/train.py --amp [--amp-dtype float16|bfloat16]`` makes every
    optimizer wrapper of the config one of these
    (:func:`mmseg_sign.engine.convert_to_amp`); a config that names
    ``type='AmpOptimWrapper'`` in ``ModuleGroupOptimWrapperConstructor``'s
    entries gets one too, so it also runs on a CPU.

    Args:
        loss_scale: as ``AmpOptimWrapper`` (``'dynamic'``, a float for a
            static scale, or ``GradScaler`` arguments); float16 only.
        dtype (str | torch.dtype, optional): ``'float16'`` or
            ``'bfloat16'``; default float16 on CUDA, bfloat16 on a CPU.
        device (str, optional): ``'cpu'`` or ``'cuda'``; default: the
            device of the optimizer's parameters.
        use_fsdp (bool): ``ShardedGradScaler`` for FSDP.
        **kwargs: ``OptimWrapper`` arguments (``optimizer``,
            ``clip_grad``, ``accumulative_counts``).
    """

    def __init__(self,
                 loss_scale: Union[str, float, dict] = 'dynamic',
                 dtype: Union[str, torch.dtype, None] = None,
                 device: Optional[str] = None,
                 use_fsdp: bool = False,
                 **kwargs):
        # AmpOptimWrapper.__init__ asserts a GPU: set up its state here
        OptimWrapper.__init__(self, **kwargs)
        self.device_type = device or _device_of(self.optimizer)
        name = check_amp_dtype(self.device_type, dtype)
        self.cast_dtype = getattr(torch, name)
        self._scale_update_param = None
        self.loss_scaler = None
        if name == 'float16':
            self.loss_scaler = self._build_scaler(loss_scale, use_fsdp)
        key = (self.device_type, name)
        if key not in _LOGGED:
            _LOGGED.add(key)
            scaling = ('a dynamic loss scale per optimizer wrapper'
                       if name == 'float16' else 'no loss scaling')
            print_log(
                f'Mixed precision: {name} autocast on '
                f'{self.device_type}, {scaling}.',
                logger='current')

    def _build_scaler(self, loss_scale, use_fsdp: bool):
        if use_fsdp:
            from torch.distributed.fsdp.sharded_grad_scaler import \
                ShardedGradScaler as scaler_type
        else:
            scaler_type = torch.amp.GradScaler
        if loss_scale == 'dynamic':
            return scaler_type(self.device_type)
        if isinstance(loss_scale, (int, float)) and \
                not isinstance(loss_scale, bool):
            self._scale_update_param = float(loss_scale)  # static scale
            return scaler_type(self.device_type, init_scale=loss_scale)
        if isinstance(loss_scale, dict):
            return scaler_type(self.device_type, **loss_scale)
        raise TypeError('loss_scale must be "dynamic", a number or a dict '
                        f'of GradScaler arguments, got {loss_scale!r}.')

    def backward(self, loss: torch.Tensor, **kwargs) -> None:
        if self.loss_scaler is None:
            return OptimWrapper.backward(self, loss, **kwargs)
        return super().backward(loss, **kwargs)

    def step(self, **kwargs) -> None:
        """Unscale (float16), clip, step; a float16 step whose gradients
        hold inf / NaN is skipped and the scale lowered."""
        if self.loss_scaler is None:
            return OptimWrapper.step(self, **kwargs)
        return super().step(**kwargs)

    def state_dict(self) -> dict:
        if self.loss_scaler is None:
            return OptimWrapper.state_dict(self)
        return super().state_dict()

    def load_state_dict(self, state_dict: dict) -> None:
        """Also loads a checkpoint of another precision: a float16 run's
        ``loss_scaler`` is dropped by bfloat16, an fp32 or bfloat16 run
        starts float16 with a fresh scale."""
        state_dict = dict(state_dict)
        scaler_state = state_dict.pop('loss_scaler', None)
        if self.loss_scaler is not None and scaler_state is not None:
            self.loss_scaler.load_state_dict(scaler_state)
        OptimWrapper.load_state_dict(self, state_dict)

    @contextmanager
    def optim_context(self, model: torch.nn.Module):
        """``OptimWrapper``'s context (gradient accumulation) and
        ``torch.autocast(device, dtype)``."""
        with OptimWrapper.optim_context(self, model), torch.autocast(
                self.device_type, dtype=self.cast_dtype, cache_enabled=False):
            yield

    @property
    def loss_scale(self) -> float:
        """The current loss scale (1 without a scaler)."""
        return 1.0 if self.loss_scaler is None else \
            float(self.loss_scaler.get_scale())
