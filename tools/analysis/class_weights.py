"""Class weights for a config's training set from its label frequencies
(ENet's ``1 / ln(1.02 + p)``, scaled to mean 1), as a config line.

    python tools/analysis/class_weights.py \\
        configs/baselines/supervised_lite0_camvid-480x360.py
    # model.decode_head.loss_decode.class_weight=[0.280, 0.234, ...]

Counts every label map of ``train_dataloader.dataset`` (its ``label_map``
applied, ignored pixels left out) and prints the pixel share and weight of
each class. The CamVid configs' weights were made with it (docs/camvid.md).
"""
import argparse

import numpy as np
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmseg.registry import DATASETS

from mmseg_sign.analysis.class_weights import (ENET_C, enet_class_weights,
                                               label_counts)
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument(
        '--c',
        type=float,
        default=ENET_C,
        help=f"ENet's constant (default {ENET_C})")
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='override config settings (e.g. '
        'train_dataloader.dataset.ann_file=...)')
    args = parser.parse_args(argv)
    if args.c <= 1:
        parser.error(f'--c must be above 1 (1 / ln(c + p) is finite for '
                     f'every share p only then), got {args.c}')
    return args


def main(argv=None):
    args = parse_args(argv)
    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    import mmseg_sign  # noqa: F401  (the project's datasets)
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    counts = label_counts(dataset)
    weights = enet_class_weights(counts, args.c)
    shares = counts / counts.sum()
    print(f'{len(dataset)} label maps, {int(counts.sum())} labelled pixels')
    print('| class | pixel share (%) | weight |')
    print('|---|---|---|')
    for name, share, weight in zip(dataset.metainfo['classes'], shares,
                                   weights):
        print(f'| {name} | {100 * share:.2f} | {weight:.3f} |')
    print('model.decode_head.loss_decode.class_weight=[' +
          ', '.join(f'{w:.3f}' for w in weights) + ']')
    return np.round(weights, 3)


if __name__ == '__main__':
    main()
