"""Optional ``torch.compile`` of chosen sub-modules (off by default).

``model.compile_cfg = dict(modules=[...], **torch.compile options)`` compiles
each named sub-module in place (``nn.Module.compile``): its parameters,
buffers and state-dict keys stay as they are, so checkpoints, optimizer
wrappers, DDP and ``--resume`` see the same model. Good candidates are the
small modules that run many short kernels on few pixels: G
(``decode_head.generator``), D (``decode_head.discriminator``) and the
SIM's encoder (``neck.encoder``). The draws inside a compiled module (e.g.
G's dropout) come from the compiled graph's own generator, so a compiled
run is not bit-identical to an eager one; without random draws inside
them the losses agree to float rounding (tests/test_models/
test_compile_modules.py). docs/benchmark.md, "Compiled modules".
"""
import inspect
from typing import Optional

import torch
from torch import nn

#: what ``compile_cfg=dict()`` (no ``modules``) compiles
DEFAULT_MODULES = ('decode_head.generator', 'decode_head.discriminator')


def compile_modules(model: nn.Module, compile_cfg: Optional[dict]) -> list:
    """Compile the sub-modules that ``compile_cfg`` names, in place.

    Args:
        model (nn.Module): the segmentor.
        compile_cfg (dict, optional): ``modules`` (dotted names; default
            :data:`DEFAULT_MODULES`, those the model has) and any
            ``torch.compile`` keyword (``backend``, ``mode``, ``dynamic``,
            ``fullgraph``, ``options``). None: nothing is compiled.

    Returns:
        list[str]: the compiled modules' names.

    Raises:
        ValueError: an unknown module name or ``torch.compile`` option,
            before anything is compiled.
    """
    if compile_cfg is None:
        return []
    if not isinstance(compile_cfg, dict):
        raise ValueError(
            f'model.compile_cfg must be a dict (e.g. dict(modules=['
            f"'decode_head.generator'])), got {compile_cfg!r}")
    options = dict(compile_cfg)
    given = options.pop('modules', None)
    if isinstance(given, str):  # one name, not its characters
        given = [given]
    names = list(DEFAULT_MODULES if given is None else given)
    allowed = set(inspect.signature(torch.compile).parameters) - {'model'}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f'model.compile_cfg: {unknown} are not '
                         f'torch.compile options; use {sorted(allowed)} '
                         '(and modules=[...]).')
    modules = []
    for name in names:
        try:
            module = model.get_submodule(name)
        except AttributeError:
            if given is None:
                continue  # a default the model lacks (e.g. no D)
            children = [n for n, _ in model.named_modules() if n][:40]
            raise ValueError(
                f'model.compile_cfg.modules: the model has no sub-module '
                f'{name!r}; its modules include {children}') from None
        modules.append((name, module))
    for _, module in modules:
        module.compile(**options)
    return [name for name, _ in modules]
