"""Speed and memory of SIGN next to its plain segmentation baseline
(``tools/analysis/benchmark.py`` is the command line; what it measures: its
docstring). Random images and labels, randomly initialised backbone."""
import copy
import logging
import os
import statistics
import threading
import time

import numpy as np
import torch
from mmengine.logging import MMLogger
from mmengine.structures import PixelData
from mmseg.registry import MODELS, OPTIM_WRAPPER_CONSTRUCTORS, OPTIM_WRAPPERS
from mmseg.structures import SegDataSample

from ..embeddings import save_class_embeddings
from ..engine.amp import wrapper_configs
from ..models.necks.input_projections import takes_levels
from ..structures.stage_plan import StagePlan
from .module_profile import module_profile
from .op_audit import count_iteration

GIB = 2**30
PROFILED = 3  # iterations of each row's module profile (--profile)


class PeakMemory:
    """Peak CUDA allocation, or peak RSS sampled every 2 ms on CPU."""

    def __init__(self, device):
        self.device = device
        self.peak = 0

    def _rss(self):
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._rss())
            time.sleep(0.002)

    def __enter__(self):
        if self.device == 'cuda':
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        else:
            self.peak = self._rss()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.device == 'cuda':
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated()
        else:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self._rss())


def timed(fn, device, warmup, repeats):
    """(median seconds, peak bytes) of ``fn`` after ``warmup`` calls.

    Args:
        fn (Callable[[], None]): the measured call.
        device (str): ``'cpu'`` or ``'cuda'`` (synchronised).
        warmup (int): calls before measuring.
        repeats (int): measured calls.

    Returns:
        tuple[float, int]: the median seconds and the peak bytes (CUDA).
    """
    for _ in range(warmup):
        fn()
    times = []
    with PeakMemory(device) as mem:
        for _ in range(repeats):
            if device == 'cuda':
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if device == 'cuda':
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    return statistics.median(times), mem.peak


def random_batch(batch_size, size, num_classes, unseen, seed=0):
    """A random batch (inputs and labels, no unseen label) of a toy size.

    Args:
        batch_size (int): images.
        size (int): their side.
        num_classes (int): classes.
        unseen (Sequence[int]): classes never labelled.
        seed (int): the generator's seed.

    Returns:
        dict: ``inputs`` and ``data_samples``.
    """
    g = torch.Generator().manual_seed(seed)
    h, w = size
    inputs, samples = [], []
    seen = torch.tensor([c for c in range(num_classes) if c not in unseen])
    for _ in range(batch_size):
        inputs.append(
            torch.randint(0, 256, (3, h, w), generator=g, dtype=torch.uint8))
        label = seen[torch.randint(
            0, len(seen), (h // 16, w // 16), generator=g)]
        label = label.repeat_interleave(16, 0).repeat_interleave(16, 1)
        label[torch.rand(h, w, generator=g) < 0.2] = 255  # void / unseen
        sample = SegDataSample(gt_sem_seg=PixelData(data=label[None]))
        sample.set_metainfo(dict(img_shape=(h, w), ori_shape=(h, w)))
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


def baseline_model_cfg(sign_model):
    """Backbone + the same projection (E's ASPP or multi-level fusion) +
    C, nothing else.

    Args:
        sign_model (dict): a SIGN model config.

    Returns:
        dict: the baseline's model config.
    """
    neck, head = sign_model['neck'], sign_model['decode_head']
    proj = neck.get('input_proj', 'aspp')
    if takes_levels(proj):  # e.g. MLPFusion over several levels
        proj = dict(
            proj,
            in_channels=neck['in_channels'],
            channels=neck['channels'],
            in_index=neck['in_index'])
    else:
        proj = dict(
            type='DeepLabV2ASPP',
            in_channels=neck['in_channels'],
            channels=neck['channels'],
            dilations=neck.get('dilations', (6, 12, 18, 24)),
            in_index=neck.get('in_index', -1))
    return dict(
        type='EncoderDecoder',
        data_preprocessor=sign_model['data_preprocessor'],
        backbone=sign_model['backbone'],
        neck=proj,
        decode_head=dict(
            type='FCNHead',
            in_channels=head['channels'],
            channels=head['channels'],
            num_convs=0,
            concat_input=False,
            num_classes=head['num_classes'],
            dropout_ratio=0.1,
            align_corners=False,
            norm_cfg=None,
            loss_decode=dict(type='CrossEntropyLoss', avg_non_ignore=True)),
        train_cfg=dict(),
        test_cfg=dict(mode='whole'))


def class_table(path, num_classes, dim):
    """A random class-embedding table of ``num_classes`` × ``dim`` at ``path``.

    Args:
        path (str): the ``.npz`` to write.
        num_classes (int): rows.
        dim (int): width.

    Returns:
        str: ``path``.
    """
    names = [f'class{i}' for i in range(num_classes)]
    vectors = np.random.default_rng(0).normal(size=(num_classes, dim))
    save_class_embeddings(path, names, vectors.astype(np.float32))
    return path


def build(cfg, device):
    """The model of ``cfg`` on ``device``, initialised, in training mode.

    Args:
        cfg (dict): a model config.
        device (str): where it runs.

    Returns:
        nn.Module: the model.
    """
    model = MODELS.build(cfg).to(device)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # no per-parameter init report
    model.init_weights()
    logger.setLevel(level)
    return model


def optim_wrappers(cfg, model, amp_dtype):
    """The config's optimizer wrappers for ``model``.

    Mixed precision with ``amp_dtype`` where it is given.

    Args:
        cfg (Config): the config (its ``optim_wrapper``).
        model (nn.Module): the model.
        amp_dtype (str, optional): the autocast dtype.

    Returns:
        OptimWrapperDict: the wrappers.
    """
    optim_cfg = copy.deepcopy(dict(cfg.optim_wrapper))
    constructor = optim_cfg.pop('constructor')
    for sub in wrapper_configs(optim_cfg).values():  # not its own type
        sub.pop('clip_grad', None)
        if amp_dtype:
            sub.update(type='MixedPrecisionOptimWrapper', dtype=amp_dtype)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # no per-parameter paramwise report
    wrappers = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type=constructor, optim_wrapper_cfg=optim_cfg))(
            model)
    logger.setLevel(level)
    return wrappers


def benchmark_models(cfg, device: str, amp_dtype, crop):
    """The SIGN model of ``cfg`` and its baseline, built for ``device``
    with their optimizer wrappers and a random batch.

    Args:
        cfg (Config): a SIGN config.
        device (str): ``'cpu'`` or ``'cuda'``.
        amp_dtype (str | None): ``'float16'`` / ``'bfloat16'`` (mixed
            precision) or ``None`` (fp32).
        crop (tuple[int, int]): the training crop ``(H, W)``.

    Returns:
        dict: ``sign``, ``baseline``, ``sign_ow``, ``base_ow``,
        ``num_classes``, ``unseen``.
    """
    sign_cfg = copy.deepcopy(cfg.model)
    sign_cfg.pretrained = None
    norm = sign_cfg.backbone.get('norm_cfg')
    if norm and norm.get('type') == 'SyncBN':
        norm['type'] = 'BN'  # one process
    head = sign_cfg.decode_head
    emb_dim = 600 if head['channels'] >= 300 else head['channels']
    head.class_embeddings = class_table(
        f'/tmp/benchmark_classes_{os.getpid()}.npz', head['num_classes'],
        emb_dim)
    num = head['num_classes']
    unseen = list(range(num - max(1, num // 4), num))
    sign_cfg.data_preprocessor['size'] = tuple(crop)
    base_cfg = baseline_model_cfg(sign_cfg)
    sign = build(sign_cfg, device)
    sign.decode_head.set_class_split(unseen)
    baseline = build(base_cfg, device)
    base_ow = OPTIM_WRAPPERS.build(
        dict(type='MixedPrecisionOptimWrapper', dtype=amp_dtype)
        if amp_dtype else dict(type='OptimWrapper'),
        default_args=dict(
            optimizer=torch.optim.SGD(
                baseline.parameters(), lr=1e-4, momentum=0.9)))
    return dict(
        sign=sign,
        baseline=baseline,
        base_ow=base_ow,
        sign_ow=optim_wrappers(cfg, sign, amp_dtype),
        num_classes=num,
        unseen=unseen)


def measure_training(cfg,
                     models: dict,
                     batch,
                     batch_size: int,
                     device: str,
                     warmup: int,
                     repeats: int,
                     counts: dict = None,
                     profiles: dict = None):
    """Seconds per training iteration of the baseline and of every SIGN
    stage (with the config's stage options).

    Args:
        cfg (Config): the SIGN config (its plan).
        models (dict): :func:`benchmark_models`'s.
        batch (dict): a training batch.
        batch_size (int): its images.
        device (str): where it runs.
        warmup (int): iterations before measuring.
        repeats (int): measured iterations.
        counts (dict, optional): filled with ``{row name: (operator
            calls, FLOPs)}`` of one more iteration (:func:`count_iteration`).
        profiles (dict, optional): filled with ``{row name: module
            table}`` of three more iterations (:func:`module_profile`).

    Returns:
        tuple: ``rows`` (``(name, s / iter, images / s, peak bytes)``),
        ``times`` (stage -> s / iter) and the baseline's s / iter.
    """
    sign, sign_ow = models['sign'], models['sign_ow']
    rows = []

    def train_row(name, model, ow):
        model.train()
        sec, mem = timed(lambda: model.train_step(batch, ow), device, warmup,
                         repeats)
        rows.append((name, sec, batch_size / sec, mem))
        print(f'  measured {name}: {sec:.3f} s', flush=True)
        if counts is not None:
            counts[name] = count_iteration(lambda: model.train_step(batch, ow))
        if profiles is not None:
            profiles[name] = module_profile(
                model,
                lambda: model.train_step(batch, ow),
                PROFILED,
                device=device)
        return sec

    t_base = train_row('baseline: train iteration', models['baseline'],
                       models['base_ow'])
    plan = {s['name']: s for s in StagePlan.from_config(cfg) or []}
    scales = tuple((sign.train_cfg or {}).get('ce_scales', (1.0, )))
    times = {}
    for stage in ('train', 'transfer', 'self_train'):
        opts = {
            k: v
            for k, v in plan.get(stage, {}).items()
            if k not in ('name', 'iters')
        }
        sign.set_stage(stage, **opts)
        if stage == 'train' and len(scales) > 1:
            sign.train_cfg['ce_scales'] = (1.0, )
            times['train'] = train_row(
                'SIGN: train iteration (single-scale CE)', sign, sign_ow)
            sign.train_cfg['ce_scales'] = scales
            # the update self-training repeats (with the same CE scales)
            times['train_config'] = train_row(
                f'SIGN: train iteration (CE at scales {scales})', sign,
                sign_ow)
        elif stage == 'transfer' and sign.stage_cfg['mode'] == 'alternate':
            blocks = []
            for block, stage_iter in (('G, D, C on real + fake seen', 0),
                                      ('C on synthetic',
                                       sign.stage_cfg['block_iters'])):
                sign.stage_iter = stage_iter
                blocks.append(
                    train_row(f'SIGN: transfer iteration '
                              f'({block})', sign, sign_ow))
            times['transfer'] = sum(blocks) / 2
        else:
            times[stage] = train_row(f'SIGN: {stage} iteration', sign, sign_ow)
    sign.set_stage('train')  # drops the teacher
    return rows, times, t_base


def measure_inference(models: dict, sizes, device: str, amp_dtype, warmup: int,
                      repeats: int) -> list:
    """Latency and peak memory of one image per size ``'HxW'``.

    Args:
        models (dict): :func:`benchmark_models`'s.
        sizes (Sequence[str]): ``'HxW'`` sizes.
        device (str): where it runs.
        amp_dtype (str, optional): the autocast dtype.
        warmup (int): calls before measuring.
        repeats (int): measured calls.

    Returns:
        list: ``(size, {'baseline': (s, bytes), 'SIGN': (s, bytes)})``.
    """
    infer = []
    for size in sizes:
        h, w = (int(v) for v in size.split('x'))
        x = torch.randn(1, 3, h, w, device=device)
        metas = [dict(img_shape=(h, w), ori_shape=(h, w), pad_shape=(h, w))]
        result = {}
        for name, model in (('baseline', models['baseline']),
                            ('SIGN', models['sign'])):
            model.eval()

            def run(model=model):
                with torch.no_grad(), torch.autocast(
                        device_type=device,
                        dtype=getattr(torch, amp_dtype or 'float16'),
                        enabled=bool(amp_dtype)):
                    model.encode_decode(x, metas)

            result[name] = timed(run, device, warmup, repeats)
            print(
                f'  measured {name} inference {size}: '
                f'{result[name][0]:.3f} s',
                flush=True)
        infer.append((size, result))
    return infer


def print_tables(rows, infer, times, t_base) -> None:
    """The measurements and the SIGN / baseline ratios as markdown.

    Args:
        rows (list): :func:`measure_training`'s rows.
        infer (list): :func:`measure_inference`'s.
        times (dict): :func:`measure_training`'s times.
        t_base (float): the baseline's seconds per iteration.
    """
    print('\n| measurement | s / iter | images / s | peak memory (GiB) |')
    print('|---|---|---|---|')
    for name, sec, ips, mem in rows:
        print(f'| {name} | {sec:.3f} | {ips:.2f} | {mem / GIB:.2f} |')
    print('\n| inference (batch 1) | baseline s | SIGN s | SIGN / baseline |'
          ' baseline peak GiB | SIGN peak GiB |')
    print('|---|---|---|---|---|---|')
    for size, r in infer:
        (bs, bm), (ss, sm) = r['baseline'], r['SIGN']
        print(f'| {size} | {bs:.3f} | {ss:.3f} | {ss / bs:.2f} | '
              f'{bm / GIB:.2f} | {sm / GIB:.2f} |')
    print('\n| ratio | value | target |')
    print('|---|---|---|')
    print(f'| SIGN train (single-scale CE) / baseline train | '
          f'{times["train"] / t_base:.2f} | ≤ 1.30 |')
    print(f'| transfer (mean of its iterations) / SIGN train | '
          f'{times["transfer"] / times["train"]:.2f} | ≤ 0.35 |')
    # self-training is the train stage's update (at the config's CE
    # scales) plus the teacher's no-grad pass: compared with the train
    # iteration at the same scales
    same = times.get('train_config', times['train'])
    print(f'| self_train / SIGN train (same CE scales) | '
          f'{times["self_train"] / same:.2f} | ≤ 1.20 |')
    if 'train_config' in times:
        print(f'| self_train / SIGN train (single-scale CE) | '
              f'{times["self_train"] / times["train"]:.2f} | – |')
    for size, r in infer:
        print(f'| inference {size}: SIGN / baseline | '
              f'{r["SIGN"][0] / r["baseline"][0]:.2f} | ≤ 1.10 |')
