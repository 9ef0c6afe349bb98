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
``--count`` adds, per training row, the ATen operator calls of one
iteration and its FLOPs (``torch.utils.flop_counter``, convolutions and
matrix products, forward + backward), each as a ratio to the baseline's:
the launch count a GPU pays for and the compute floor it can approach
(docs/benchmark.md).
"""
import argparse

import torch
from mmengine.config import Config
from mmseg.utils import register_all_modules

import mmseg_sign  # noqa: F401
from mmseg_sign.analysis.benchmark import (PROFILED, benchmark_models,
                                           measure_inference, measure_training,
                                           print_tables, random_batch)
from mmseg_sign.analysis.module_profile import markdown
from mmseg_sign.analysis.op_audit import print_counts, use_foreach
from mmseg_sign.engine.optim_wrappers import check_amp_dtype
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options

MIN_SIZE = 32  # smallest benchmark input: 4×4 features at output stride 8


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--device', choices=['cpu', 'cuda'], default='cpu')
    parser.add_argument(
        '--amp',
        action='store_true',
        help='mixed precision (MixedPrecisionOptimWrapper, '
        'autocast): float16 on CUDA, bfloat16 on a CPU')
    parser.add_argument(
        '--amp-dtype',
        choices=['float16', 'bfloat16'],
        help='the autocast dtype (implies --amp)')
    parser.add_argument('--batch-size', type=int, default=2)
    parser.add_argument('--crop', type=int, nargs=2, default=[512, 512])
    parser.add_argument(
        '--sizes',
        nargs='+',
        default=['256x256', '512x512', '512x1024', '1024x2048'],
        help='inference sizes HxW (batch 1)')
    parser.add_argument('--warmup', type=int, default=1)
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=None)
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='override config settings, e.g. '
        'model.neck.encoder_cfg.key_pool=4')
    parser.add_argument(
        '--foreach',
        action='store_true',
        help="every optimizer (SIGN's and the baseline's) steps with torch's "
        'foreach kernels, its default on a GPU (a CPU steps parameter by '
        'parameter): --count then counts the launches a GPU makes')
    parser.add_argument(
        '--count',
        action='store_true',
        help='also count the ATen operator calls and FLOPs '
        'of one iteration of each training row')
    parser.add_argument(
        '--profile',
        action='store_true',
        help='print, per training row, where its time goes module by '
        'module (torch.profiler, self CPU time of forward and backward '
        'operators, docs/benchmark.md)')
    args = parser.parse_args(argv)
    if args.device == 'cuda' and not torch.cuda.is_available():
        parser.error('--device cuda, but torch.cuda.is_available() is False '
                     '(no GPU, or a CPU build of torch); use --device cpu.')
    for size in args.sizes:
        h, sep, w = size.partition('x')
        if not (sep and h.isdigit() and w.isdigit()) or \
                min(int(h), int(w)) < MIN_SIZE:
            parser.error(f'--sizes {size}: each size is HxW with H, W >= '
                         f'{MIN_SIZE}, e.g. 512x1024.')
    if min(args.crop) < MIN_SIZE:
        parser.error(f'--crop {args.crop[0]} {args.crop[1]}: H and W must '
                     f'be >= {MIN_SIZE} (the backbone downsamples by 8).')
    for name in ('batch_size', 'repeats', 'threads'):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f'--{name.replace("_", "-")} must be >= 1, got '
                         f'{value}.')
    if args.warmup < 0:
        parser.error(f'--warmup must be >= 0, got {args.warmup}.')
    return args


def main():
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    register_all_modules()
    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    device = args.device
    amp_dtype = check_amp_dtype(device, args.amp_dtype) \
        if args.amp or args.amp_dtype else None
    print(f'torch {torch.__version__}, device {device}' +
          (f' ({torch.cuda.get_device_name()})' if device ==
           'cuda' else f', {torch.get_num_threads()} threads') +
          f', amp {amp_dtype or False}, batch {args.batch_size}, crop '
          f'{args.crop[0]}x{args.crop[1]}, config {args.config}')
    models = benchmark_models(cfg, device, amp_dtype, args.crop)
    if args.foreach:
        use_foreach(models['base_ow'], models['sign_ow'])
    batch = random_batch(args.batch_size, args.crop, models['num_classes'],
                         models['unseen'])
    counts = {} if args.count else None
    profiles = {} if args.profile else None
    rows, times, t_base = measure_training(cfg, models, batch, args.batch_size,
                                           device, args.warmup, args.repeats,
                                           counts, profiles)
    infer = measure_inference(models, args.sizes, device, amp_dtype,
                              args.warmup, args.repeats)
    print_tables(rows, infer, times, t_base)
    if counts:
        print_counts(counts)
    for name, table in (profiles or {}).items():
        print(markdown(table, PROFILED, name))


if __name__ == '__main__':
    main()
