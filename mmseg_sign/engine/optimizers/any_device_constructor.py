"""mmengine's one-optimizer constructor, with mixed precision on any
device: for configs with one optimizer wrapper (SPNet's)."""
import copy
from typing import Optional

from mmengine.optim import AmpOptimWrapper, DefaultOptimWrapperConstructor
from mmseg.registry import OPTIM_WRAPPER_CONSTRUCTORS

from ..amp import AMP_WRAPPER


@OPTIM_WRAPPER_CONSTRUCTORS.register_module()
class AnyDeviceOptimWrapperConstructor(DefaultOptimWrapperConstructor):
    """``DefaultOptimWrapperConstructor`` (one wrapper, mmengine's
    ``paramwise_cfg``), building ``type='AmpOptimWrapper'`` as
    ``MixedPrecisionOptimWrapper`` with the same arguments.

    mmseg's ``tools/train.py --amp`` (and ``mim train``) sets
    ``optim_wrapper.type = 'AmpOptimWrapper'``, whose mmengine class
    asserts a GPU: on a CPU the run stopped with an assertion.
    ``MixedPrecisionOptimWrapper`` (``engine/optim_wrappers``) autocasts on
    the training device, as this project's ``tools/train.py --amp`` does
    for the same config. Without AMP the wrapper is mmengine's, unchanged.
    """

    def __init__(self,
                 optim_wrapper_cfg: dict,
                 paramwise_cfg: Optional[dict] = None):
        cfg = copy.deepcopy(optim_wrapper_cfg)
        if cfg.get('type') in ('AmpOptimWrapper', AmpOptimWrapper):
            cfg['type'] = AMP_WRAPPER
        super().__init__(cfg, paramwise_cfg)
