"""Where each class's pixels go: the rows of the confusion matrix of a
checkpoint on its config's test set, unseen classes first (docs/camvid.md).

    python tools/analysis/unseen_confusion.py CONFIG CHECKPOINT \\
        [--top 3] [--all] [--cfg-options KEY=VALUE ...]

For each class (``--all``; default: the unseen ones), the share of its
labelled pixels predicted as each class (the ``--top`` largest), and the
share predicted as any unseen class; then, over every labelled pixel, the
share predicted unseen. GZSL's seen bias shows here: an unseen class whose
pixels go to a seen class of similar meaning or look (pavement → road).
"""
import argparse

import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmseg.apis import inference_model
from mmseg.registry import DATASETS

from mmseg_sign.apis.inference import init_model_checked
from mmseg_sign.engine.hooks import CheckpointMismatchError
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options
from mmseg_sign.utils.device import check_device


def confusion(model, dataset) -> np.ndarray:
    """``[K, K]`` pixel counts: row = label, column = prediction (void
    pixels left out).

    Args:
        model (nn.Module): the segmentor (``init_model_checked``'s).
        dataset (BaseSegDataset): the test dataset.

    Returns:
        np.ndarray: int64 counts.
    """
    k = len(dataset.metainfo['classes'])
    counts = np.zeros((k, k), np.int64)
    for index in range(len(dataset)):
        sample = dataset[index]
        label = sample['data_samples'].gt_sem_seg.data[0].numpy()
        with torch.no_grad():
            result = inference_model(model,
                                     dataset.get_data_info(index)['img_path'])
        pred = result.pred_sem_seg.data[0].cpu().numpy()
        keep = label != dataset.ignore_index
        counts += np.bincount(
            label[keep] * k + pred[keep], minlength=k * k).reshape(k, k)
    return counts


def report(counts: np.ndarray,
           classes,
           unseen,
           top: int = 3,
           rows=None) -> list:
    """Markdown lines: per class (``rows``, default the unseen ones) its
    pixels, the ``top`` predicted classes with their shares, and the share
    predicted as any unseen class.

    Args:
        counts (np.ndarray): :func:`confusion`'s.
        classes (Sequence[str]): the class names.
        unseen (Sequence[str]): the unseen ones.
        top (int): predicted classes listed per row.
        rows (Sequence[str], optional): the classes to report.

    Returns:
        list[str]: the table and a closing line.
    """
    unseen_ids = [classes.index(c) for c in unseen]
    lines = [
        '| class | pixels | predicted as (share of its pixels) | '
        'predicted unseen |', '|---|---|---|---|'
    ]
    for name in rows or unseen:
        i = classes.index(name)
        total = counts[i].sum()
        if not total:
            lines.append(f'| {name} | 0 | – | – |')
            continue
        shares = counts[i] / total
        order = np.argsort(-shares, kind='stable')[:top]
        listed = ', '.join(f'{classes[j]} {100 * shares[j]:.1f} %'
                           for j in order if shares[j] > 0)
        tag = ' (unseen)' if i in unseen_ids else ''
        lines.append(f'| {name}{tag} | {total} | {listed} | '
                     f'{100 * shares[unseen_ids].sum():.1f} % |')
    all_pixels = counts.sum()
    lines.append('')
    lines.append(f'Of all {all_pixels} labelled pixels, '
                 f'{100 * counts[:, unseen_ids].sum() / all_pixels:.1f} % '
                 'are predicted unseen; '
                 f'{100 * counts[unseen_ids].sum() / all_pixels:.1f} % are '
                 'labelled unseen.')
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--top', type=int, default=3)
    parser.add_argument(
        '--all',
        action='store_true',
        help='every class, not only the unseen ones')
    parser.add_argument('--device', default='cpu')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction)
    args = parser.parse_args(argv)
    if args.top < 1:
        parser.error(f'--top must be >= 1, got {args.top}.')
    try:
        check_device(args.device)
    except ValueError as err:
        parser.error(f'--device: {err}')
    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    dataset = DATASETS.build(cfg.test_dataloader.dataset)
    meta = dataset.metainfo
    if not meta.get('unseen_classes'):
        parser.error(f'{args.config}: the test dataset has no unseen '
                     'classes.')
    try:
        model = init_model_checked(
            cfg, args.checkpoint, args.device, dataset_classes=meta['classes'])
    except CheckpointMismatchError as err:
        raise SystemExit(f'error: {err}') from None
    counts = confusion(model, dataset)
    classes = list(meta['classes'])
    print('\n'.join(
        report(counts, classes, list(meta['unseen_classes']), args.top,
               classes if args.all else None)))


if __name__ == '__main__':
    main()
