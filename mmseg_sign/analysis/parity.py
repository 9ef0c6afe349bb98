"""Parity of SIGN's training computation between two settings (device,
dtype, TF32): every loss and every parameter's gradient of every stage's
update, on one fixed model and one fixed batch (docs/gpu.md).

It is the tool that names the operation where a GPU computes something
other than a CPU: each setting runs each stage's real step
(``ZeroShotEncoderDecoder._<stage>_step``) once, with every optimizer
step replaced by a recorder (the gradients are read, the weights never
move, so every update of the iteration sees the same weights in both
settings), and with every random draw pinned (:func:`pinned_randomness`:
``z``, dropout masks, pixel samples and sampled labels are drawn on the
CPU in float64 and moved), so two settings differ only by what their
kernels compute. ``tools/analysis/parity.py`` prints the comparison;
``tools/analysis/gpu_check.sh`` runs it on a GPU.
"""
import contextlib
import copy
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from ..structures.stage_plan import stage_options
from ..utils.random_draws import pinned_randomness

SETTING_HELP = ('DEVICE:DTYPE[:tf32], e.g. cpu:float64, cuda:float32 '
                '(TF32 off), cuda:float32:tf32 (PyTorch\'s default for '
                'cuDNN convolutions on)')
DTYPES = dict(float64=torch.float64, float32=torch.float32)


def parse_setting(text: str) -> Tuple[str, torch.dtype, bool]:
    """``'cuda:float32:tf32'`` → ``('cuda', torch.float32, True)``.

    Args:
        text (str): ``DEVICE:DTYPE[:tf32]``.

    Returns:
        tuple: device, dtype and whether TF32 is allowed.

    Raises:
        ValueError: naming the part that is wrong.
    """
    parts = text.split(':')
    if len(parts) not in (2, 3) or parts[0] not in ('cpu', 'cuda') or \
            parts[1] not in DTYPES or parts[2:] not in ([], ['tf32']):
        raise ValueError(f'setting {text!r}: expected {SETTING_HELP}.')
    if parts[2:] and (parts[0], parts[1]) != ('cuda', 'float32'):
        # TF32 is a CUDA float32 matmul / cuDNN mode: elsewhere the flags
        # change nothing, and the row would be labelled TF32 wrongly
        raise ValueError(
            f'setting {text!r}: tf32 applies to cuda:float32 only (TF32 is '
            'how CUDA runs float32 matrix products and convolutions); drop '
            f':tf32, e.g. {parts[0]}:{parts[1]}.')
    if parts[0] == 'cuda' and not torch.cuda.is_available():
        raise ValueError(f'setting {text!r}: CUDA is not available here '
                         '(torch.cuda.is_available() is False).')
    return parts[0], DTYPES[parts[1]], parts[2:] == ['tf32']


@contextlib.contextmanager
def tf32_allowed(enabled: bool) -> Iterator[None]:
    """cuDNN convolutions and CUDA matrix products with TF32 allowed or
    not (PyTorch's defaults: on for cuDNN, off for matmul)."""
    saved = (torch.backends.cudnn.allow_tf32,
             torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = enabled
    torch.backends.cuda.matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        (torch.backends.cudnn.allow_tf32,
         torch.backends.cuda.matmul.allow_tf32) = saved


def plan_steps(stages: Sequence[dict]) -> List[Tuple[str, str, dict, int]]:
    """One step per update kind of a stage plan: ``(label, stage name,
    stage options, stage_iter)``; the alternate transfer gives two
    (its real + fake block and its synthetic block).

    Args:
        stages (Sequence[dict]): a plan's stages (``train_cfg.stages``).

    Returns:
        list: the steps, in plan order.
    """
    steps = []
    for i, stage in enumerate(stages):
        opts = stage_options(i, dict(stage))
        name = opts.pop('name')
        opts.pop('iters')
        if name == 'transfer' and opts['mode'] == 'alternate':
            steps.append(('transfer[real+fake]', name, opts, 0))
            steps.append(
                ('transfer[synthetic]', name, opts, opts['block_iters']))
        else:
            steps.append((name, name, opts, 0))
    return steps


def record_step(model, wrappers, label: str, stage: str, opts: dict,
                stage_iter: int, inputs: Tensor,
                data_samples) -> Dict[str, Tensor]:
    """Run one step with every wrapper's ``step`` replaced by a recorder;
    ``{'<label>/<loss>': value, '<label>/<wrapper>/<param>': grad}``."""
    out = {}

    def recorder(name, wrapper):

        def step(**kwargs):
            for group in wrapper.optimizer.param_groups:
                for p in group['params']:
                    if p.grad is not None:
                        out[f'{label}/{name}/{param_names[id(p)]}'] = \
                            p.grad.detach().double().cpu()

        return step

    param_names = {id(p): n for n, p in model.named_parameters()}
    saved = {}
    for name, wrapper in wrappers.items():
        saved[name] = wrapper.__dict__.get('step')
        wrapper.step = recorder(name, wrapper)
    try:
        model.train()
        model.set_stage(stage, **opts)
        model.stage_iter = stage_iter
        log_vars = getattr(model, f'_{stage}_step')(inputs, data_samples,
                                                    wrappers)
    finally:
        for name, wrapper in wrappers.items():
            if saved[name] is None:
                del wrapper.step
            else:
                wrapper.step = saved[name]
    for key, value in log_vars.items():
        if key.startswith('loss'):
            out[f'{label}/{key}'] = torch.as_tensor(
                value).detach().double().cpu()
    return out


def run_setting(cfg,
                state_dict: dict,
                batch: dict,
                setting: str,
                steps: Sequence[tuple],
                seed: int = 0) -> Dict[str, Tensor]:
    """Losses and gradients of every step in one setting.

    Args:
        cfg (Config): the run's config (model, optim_wrapper).
        state_dict (dict): the fixed weights (CPU).
        batch (dict): ``{'inputs': [B, 3, H, W] float32 CPU, 'data_samples':
            [...]}`` after the data preprocessor.
        setting (str): ``DEVICE:DTYPE[:tf32]`` (:func:`parse_setting`).
        steps (Sequence[tuple]): :func:`plan_steps`.
        seed (int): the pinned draws' seed.

    Returns:
        dict: ``{key: float64 CPU tensor}``.
    """
    device, dtype, tf32 = parse_setting(setting)
    model, wrappers, inputs, samples = placed_model(cfg, state_dict, batch,
                                                    device, dtype)
    out = {}
    with tf32_allowed(tf32):
        for label, stage, opts, stage_iter in steps:
            with pinned_randomness(seed):
                out.update(
                    record_step(model, wrappers, label, stage, opts,
                                stage_iter, inputs, samples))
    return out


def placed_model(cfg, state_dict: dict, batch: dict, device: str,
                 dtype: torch.dtype) -> tuple:
    """The model with ``state_dict`` and the run's optimizer wrappers, and
    the batch, on ``device`` in ``dtype``.

    Args:
        cfg (Config): the run's config.
        state_dict (dict): the fixed weights (CPU).
        batch (dict): :func:`fixed_batch`'s.
        device (str): ``'cpu'`` or ``'cuda'``.
        dtype (torch.dtype): the parameters' and inputs' dtype.

    Returns:
        tuple: ``(model, OptimWrapperDict, inputs, data_samples)``.
    """
    from mmengine.optim import build_optim_wrapper
    model = build_model(cfg, batch['metainfo'])
    model.load_state_dict(state_dict)
    model.to(device=device, dtype=dtype)
    wrappers = build_optim_wrapper(model, copy.deepcopy(cfg.optim_wrapper))
    inputs = batch['inputs'].to(device=device, dtype=dtype)
    samples = [s.to(device) for s in batch['data_samples']]
    return model, wrappers, inputs, samples


def _group(key: str) -> str:
    """``'train/segmentor/neck.encoder.qkv.weight'`` → ``'train/segmentor/
    neck.encoder'``: a gradient's module (two levels below the model)."""
    label, rest = key.split('/', 1)
    if '/' not in rest:
        return key  # a loss
    wrapper, param = rest.split('/', 1)
    parts = param.split('.')
    depth = 3 if parts[0] == 'decode_head' else 2
    return f'{label}/{wrapper}/{".".join(parts[:min(depth, len(parts) - 1)])}'


def compare(a: Dict[str, Tensor],
            b: Dict[str, Tensor],
            by_group: bool = True) -> List[Tuple[str, float, float, str]]:
    """Worst relative difference per term: ``max|a − b| / max|b|`` (0 when
    both are 0) for each loss and each gradient, the gradients taken
    together per module (:func:`_group`) with the parameter that differs
    most named; a key present in one setting only is reported with
    ``inf``.

    Args:
        a, b (dict): :func:`run_setting` results.
        by_group (bool): one row per module instead of per parameter.

    Returns:
        list: ``(term, relative difference, scale max|b|, worst key)``,
        worst first.
    """
    rows = {}
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            diff, scale = float('inf'), 0.0
        else:
            scale = float(b[key].abs().max()) if b[key].numel() else 0.0
            err = float((a[key] - b[key]).abs().max()) \
                if b[key].numel() else 0.0
            diff = err / scale if scale else (
                0.0 if err == 0 else float('inf'))
        term = _group(key) if by_group else key
        if term not in rows or diff > rows[term][0]:
            scale = max(scale, rows[term][1]) if term in rows else scale
            rows[term] = (diff, scale, key)
    return sorted(((t, d, s, k) for t, (d, s, k) in rows.items()),
                  key=lambda r: -r[1])


def format_table(rows,
                 name_a: str,
                 name_b: str,
                 limit: Optional[int] = None) -> str:
    """A markdown table of :func:`compare`'s rows."""
    lines = [
        f'| term | max rel. diff {name_a} vs {name_b} | max abs | '
        'worst parameter |', '|---|---|---|---|'
    ]
    for term, diff, scale, key in rows[:limit]:
        worst = key.split('/')[-1] if key != term else ''
        lines.append(f'| {term} | {diff:.3g} | {scale:.3g} | {worst} |')
    return '\n'.join(lines)


def fixed_batch(cfg, batch_size: int, seed: int = 0) -> dict:
    """The first ``batch_size`` training samples of ``cfg``'s training
    set through its pipeline (numpy / random seeded, so random crops and
    flips are fixed) and the model's data preprocessor, on the CPU.

    Args:
        cfg (Config): the run's config.
        batch_size (int): samples in the batch.
        seed (int): the pipeline's seed.

    Returns:
        dict: ``{'inputs': Tensor, 'data_samples': list, 'metainfo':
        the dataset's metainfo}``.
    """
    import random

    import numpy as np
    from mmengine.dataset import pseudo_collate
    from mmseg.registry import DATASETS, MODELS
    random.seed(seed)
    np.random.seed(seed)
    dataset = DATASETS.build(copy.deepcopy(cfg.train_dataloader.dataset))
    samples = [dataset[i % len(dataset)] for i in range(batch_size)]
    pre = MODELS.build(copy.deepcopy(cfg.model.data_preprocessor))
    return dict(pre(pseudo_collate(samples), True), metainfo=dataset.metainfo)


def build_model(cfg, metainfo: dict):
    """``cfg.model`` with the training set's seen / unseen split (as
    ``ClassSplitHook`` gives it to the head).

    Args:
        cfg (Config): the run's config.
        metainfo (dict): the training dataset's metainfo.

    Returns:
        nn.Module: the segmentor, on the CPU.
    """
    from mmseg.registry import MODELS
    model = MODELS.build(copy.deepcopy(cfg.model))
    if 'unseen_classes' in metainfo:
        model.decode_head.set_class_split(metainfo['unseen_classes'],
                                          metainfo['classes'])
    return model


def fixed_weights(cfg,
                  metainfo: dict,
                  checkpoint: Optional[str] = None,
                  seed: int = 0) -> dict:
    """The weights every setting starts from: ``checkpoint``'s, or the
    config's initialisation (``init_weights``) with ``seed``, on the CPU.

    Args:
        cfg (Config): the run's config.
        metainfo (dict): the training dataset's metainfo.
        checkpoint (str, optional): a checkpoint path.
        seed (int): the initialisation seed.

    Returns:
        dict: a CPU state dict.
    """
    import logging

    from mmengine.logging import MMLogger
    from mmengine.runner import load_checkpoint
    torch.manual_seed(seed)
    model = build_model(cfg, metainfo)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # not the per-parameter init log
    try:
        model.init_weights()
    finally:
        logger.setLevel(level)
    if checkpoint:
        load_checkpoint(model, checkpoint, map_location='cpu', strict=True)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
