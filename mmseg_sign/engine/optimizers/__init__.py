from .any_device_constructor import AnyDeviceOptimWrapperConstructor
from .multi_optim_constructor import ModuleGroupOptimWrapperConstructor

__all__ = [
    'AnyDeviceOptimWrapperConstructor', 'ModuleGroupOptimWrapperConstructor'
]
