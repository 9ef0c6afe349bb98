"""Speed and memory of SIGN next to the plain segmentation model.

    python tools/analysis/benchmark.py configs/sign/sign_voc.py \
        --device cpu --batch-size 2 --crop 512 512

Measures, in one process, with warm-up and the median over repeats:

* seconds per training iteration of every SIGN stage (``train``,
  ``transfer``, ``self_train``) and images per second;
* inference latency per image at several input sizes;
* peak memory of each measurement (CUDA: peak allocated; CPU: peak
  resident set size, sampled while it runs);

in fp32, or with ``--amp [--amp-dtype float16|bfloat16]`` in mixed
precision as ``tools/train.py --amp`` trains (MixedPrecisionOptimWrapper;
inference under the same autocast),

for SIGN and for its baseline, the same backbone and ASPP projection with
the classifier C on top and no SIM / G / D (``EncoderDecoder`` +
``DeepLabV2ASPP`` neck + ``FCNHead`` with no convs), and prints the table
with the ratios SIGN / baseline. Random images and labels (no dataset
needed); the backbone is randomly initialised (``pretrained=None``).
"""
import argparse
import copy
import logging
import os
import statistics
import threading
import time

import numpy as np
import torch
from mmengine.config import Config
from mmengine.logging import MMLogger
from mmengine.structures import PixelData

import mmseg_sign  # noqa: F401
from mmseg_sign.engine.optim_wrappers import check_amp_dtype
from mmseg_sign.structures.stage_plan import stage_options
from mmseg.registry import (MODELS, OPTIM_WRAPPER_CONSTRUCTORS,
                            OPTIM_WRAPPERS)
from mmseg.structures import SegDataSample
from mmseg.utils import register_all_modules


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
    """(median seconds, peak bytes) of ``fn`` after ``warmup`` calls."""
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
    g = torch.Generator().manual_seed(seed)
    h, w = size
    inputs, samples = [], []
    seen = torch.tensor([c for c in range(num_classes) if c not in unseen])
    for _ in range(batch_size):
        inputs.append(torch.randint(0, 256, (3, h, w), generator=g,
                                    dtype=torch.uint8))
        label = seen[torch.randint(0, len(seen), (h // 16, w // 16),
                                   generator=g)]
        label = label.repeat_interleave(16, 0).repeat_interleave(16, 1)
        label[torch.rand(h, w, generator=g) < 0.2] = 255  # void / unseen
        sample = SegDataSample(gt_sem_seg=PixelData(data=label[None]))
        sample.set_metainfo(dict(img_shape=(h, w), ori_shape=(h, w)))
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


def baseline_model_cfg(sign_model):
    """Backbone + the same ASPP projection + C, nothing else."""
    neck, head = sign_model['neck'], sign_model['decode_head']
    return dict(
        type='EncoderDecoder',
        data_preprocessor=sign_model['data_preprocessor'],
        backbone=sign_model['backbone'],
        neck=dict(
            type='DeepLabV2ASPP', in_channels=neck['in_channels'],
            channels=neck['channels'],
            dilations=neck.get('dilations', (6, 12, 18, 24)),
            in_index=neck.get('in_index', -1)),
        decode_head=dict(
            type='FCNHead', in_channels=head['channels'],
            channels=head['channels'], num_convs=0, concat_input=False,
            num_classes=head['num_classes'], dropout_ratio=0.1,
            align_corners=False, norm_cfg=None,
            loss_decode=dict(type='CrossEntropyLoss', avg_non_ignore=True)),
        train_cfg=dict(),
        test_cfg=dict(mode='whole'))


def class_table(path, num_classes, dim):
    from mmseg_sign.embeddings import save_class_embeddings
    names = [f'class{i}' for i in range(num_classes)]
    vectors = np.random.default_rng(0).normal(size=(num_classes, dim))
    save_class_embeddings(path, names, vectors.astype(np.float32))
    return path


def build(cfg, device):
    model = MODELS.build(cfg).to(device)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # no per-parameter init report
    model.init_weights()
    logger.setLevel(level)
    return model


def optim_wrappers(cfg, model, amp_dtype):
    optim_cfg = copy.deepcopy(dict(cfg.optim_wrapper))
    constructor = optim_cfg.pop('constructor')
    for sub in optim_cfg.values():
        sub.pop('clip_grad', None)
        if amp_dtype:
            sub.update(type='MixedPrecisionOptimWrapper', dtype=amp_dtype)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # no per-parameter paramwise report
    wrappers = OPTIM_WRAPPER_CONSTRUCTORS.build(
        dict(type=constructor, optim_wrapper_cfg=optim_cfg))(model)
    logger.setLevel(level)
    return wrappers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--device', choices=['cpu', 'cuda'], default='cpu')
    parser.add_argument('--amp', action='store_true',
                        help='mixed precision (MixedPrecisionOptimWrapper, '
                        'autocast): float16 on CUDA, bfloat16 on a CPU')
    parser.add_argument('--amp-dtype', choices=['float16', 'bfloat16'],
                        help='the autocast dtype (implies --amp)')
    parser.add_argument('--batch-size', type=int, default=2)
    parser.add_argument('--crop', type=int, nargs=2, default=[512, 512])
    parser.add_argument('--sizes', nargs='+',
                        default=['256x256', '512x512', '512x1024',
                                 '1024x2048'],
                        help='inference sizes HxW (batch 1)')
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=None)
    parser.add_argument('--profile', action='store_true',
                        help='print torch.profiler\'s top operators of a '
                        'SIGN train iteration')
    args = parser.parse_args()
    if args.device == 'cuda' and not torch.cuda.is_available():
        parser.error('--device cuda, but torch.cuda.is_available() is False')
    if args.threads:
        torch.set_num_threads(args.threads)
    register_all_modules()
    cfg = Config.fromfile(args.config)
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
    unseen = list(range(head['num_classes'] - max(1, head['num_classes'] //
                                                 4), head['num_classes']))
    sign_cfg.data_preprocessor['size'] = tuple(args.crop)
    base_cfg = baseline_model_cfg(sign_cfg)
    device = args.device
    amp_dtype = check_amp_dtype(device, args.amp_dtype) \
        if args.amp or args.amp_dtype else None
    amp = amp_dtype or False
    print(f'torch {torch.__version__}, device {device}'
          + (f' ({torch.cuda.get_device_name()})' if device == 'cuda' else
             f', {torch.get_num_threads()} threads')
          + f', amp {amp}, batch {args.batch_size}, crop '
          f'{args.crop[0]}x{args.crop[1]}, config {args.config}')

    sign = build(sign_cfg, device)
    sign.decode_head.set_class_split(unseen)
    baseline = build(base_cfg, device)
    sign_ow = optim_wrappers(cfg, sign, amp_dtype)
    base_ow = OPTIM_WRAPPERS.build(
        dict(type='MixedPrecisionOptimWrapper', dtype=amp_dtype) if amp
        else dict(type='OptimWrapper'),
        default_args=dict(optimizer=torch.optim.SGD(
            baseline.parameters(), lr=1e-4, momentum=0.9)))
    batch = random_batch(args.batch_size, args.crop,
                         head['num_classes'], unseen)
    rows = []

    def train_row(name, model, ow):
        model.train()
        sec, mem = timed(lambda: model.train_step(batch, ow), device,
                         args.warmup, args.repeats)
        rows.append((name, sec, args.batch_size / sec, mem))
        print(f'  measured {name}: {sec:.3f} s', flush=True)
        return sec

    t_base = train_row('baseline: train iteration', baseline, base_ow)
    # the config's own stage options (e.g. the alternating transfer)
    plan = {s['name']: s for s in (
        stage_options(i, s) for i, s in enumerate(next(
            (h['stages'] for h in cfg.get('custom_hooks', [])
             if h.get('type') == 'SIGNStageHook'), [])))}
    scales = tuple((sign.train_cfg or {}).get('ce_scales', (1.0, )))
    times = {}
    for stage in ('train', 'transfer', 'self_train'):
        opts = {k: v for k, v in plan.get(stage, {}).items()
                if k not in ('name', 'iters')}
        sign.set_stage(stage, **opts)
        if stage == 'train' and len(scales) > 1:
            sign.train_cfg['ce_scales'] = (1.0, )
            times['train'] = train_row(
                'SIGN: train iteration (single-scale CE)', sign, sign_ow)
            sign.train_cfg['ce_scales'] = scales
            train_row(f'SIGN: train iteration (CE at scales {scales})',
                      sign, sign_ow)
        elif stage == 'transfer' and sign.stage_cfg['mode'] == 'alternate':
            blocks = []
            for block, stage_iter in (('G, D, C on real + fake seen', 0),
                                      ('C on synthetic',
                                       sign.stage_cfg['block_iters'])):
                sign.stage_iter = stage_iter
                blocks.append(train_row(f'SIGN: transfer iteration '
                                        f'({block})', sign, sign_ow))
            times['transfer'] = sum(blocks) / 2
        else:
            times[stage] = train_row(f'SIGN: {stage} iteration', sign,
                                     sign_ow)
    sign.set_stage('train')  # drops the teacher
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + (
            [ProfilerActivity.CUDA] if device == 'cuda' else [])
        sign.train()
        with profile(activities=activities) as prof:
            for _ in range(3):
                sign.train_step(batch, sign_ow)
            if device == 'cuda':
                torch.cuda.synchronize()
        print(prof.key_averages().table(
            sort_by=f'self_{"cuda" if device == "cuda" else "cpu"}'
            '_time_total', row_limit=25))

    infer = []
    for size in args.sizes:
        h, w = (int(v) for v in size.split('x'))
        x = torch.randn(1, 3, h, w, device=device)
        metas = [dict(img_shape=(h, w), ori_shape=(h, w), pad_shape=(h, w))]
        result = {}
        for name, model in (('baseline', baseline), ('SIGN', sign)):
            model.eval()

            def run(model=model):
                with torch.no_grad(), torch.autocast(
                        device_type=device, dtype=getattr(
                            torch, amp_dtype or 'float16'),
                        enabled=bool(amp)):
                    model.encode_decode(x, metas)

            result[name] = timed(run, device, args.warmup, args.repeats)
            print(f'  measured {name} inference {size}: '
                  f'{result[name][0]:.3f} s', flush=True)
        infer.append((size, result))

    gib = 2**30
    print()
    print('| measurement | s / iter | images / s | peak memory (GiB) |')
    print('|---|---|---|---|')
    for name, sec, ips, mem in rows:
        print(f'| {name} | {sec:.3f} | {ips:.2f} | {mem / gib:.2f} |')
    print()
    print('| inference (batch 1) | baseline s | SIGN s | SIGN / baseline |'
          ' baseline peak GiB | SIGN peak GiB |')
    print('|---|---|---|---|---|---|')
    for size, r in infer:
        (bs, bm), (ss, sm) = r['baseline'], r['SIGN']
        print(f'| {size} | {bs:.3f} | {ss:.3f} | {ss / bs:.2f} | '
              f'{bm / gib:.2f} | {sm / gib:.2f} |')
    print()
    print('| ratio | value | target |')
    print('|---|---|---|')
    print(f'| SIGN train (single-scale CE) / baseline train | '
          f'{times["train"] / t_base:.2f} | ≤ 1.30 |')
    print(f'| transfer (mean of its iterations) / SIGN train | '
          f'{times["transfer"] / times["train"]:.2f} | ≤ 0.35 |')
    print(f'| self_train / SIGN train | '
          f'{times["self_train"] / times["train"]:.2f} | – |')
    for size, r in infer:
        print(f'| inference {size}: SIGN / baseline | '
              f'{r["SIGN"][0] / r["baseline"][0]:.2f} | ≤ 1.10 |')


if __name__ == '__main__':
    main()
