"""Registries of the ``mmseg_sign`` scope: empty children of mmseg's.

The project registers its modules in mmseg's registries (configs keep
``default_scope = 'mmseg'``). These children exist for configs that
inherit ours by package path, ``_base_ = ['mmseg_sign::sign/sign_voc.py']``:
mmengine then builds that base's modules in the ``mmseg_sign`` scope, and
each lookup falls through to mmseg's registry (and mmengine's above it).
"""
import mmseg.registry as _mmseg
from mmengine.registry import Registry

__all__ = list(_mmseg.__all__)

for _name in __all__:
    _parent = getattr(_mmseg, _name)
    # `locations`: importing mmseg_sign registers everything (in mmseg's
    # registries, which these fall through to)
    globals()[_name] = Registry(
        _parent.name,
        parent=_parent,
        scope='mmseg_sign',
        locations=['mmseg_sign'])
