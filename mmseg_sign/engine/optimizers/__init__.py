from .multi_optim_constructor import ModuleGroupOptimWrapperConstructor

__all__ = ["ModuleGroupOptimWrapperConstructor"]
