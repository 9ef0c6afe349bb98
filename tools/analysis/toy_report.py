"""Pictures of a SIGN run: predictions next to the ground truth, and the
losses of every stage.

    python tools/analysis/toy_report.py CONFIG CHECKPOINT --work-dir DIR

Writes ``DIR/predictions.png`` (test images | ground truth | prediction,
drawn by mmseg's ``SegLocalVisualizer``; unseen classes are named in red
and outlined in white) and ``DIR/losses.png`` (every logged loss against
the iteration, one band per stage), and prints their paths.
"""
import argparse
import os.path as osp

from mmengine.config import Config

import mmseg_sign  # noqa: F401
from mmseg_sign.analysis.toy_report import draw_predictions, plot_losses
from mmseg_sign.utils.device import check_device


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument(
        '--work-dir',
        required=True,
        help='the training work dir (logs); pictures go '
        'there too')
    parser.add_argument('--num-images', type=int, default=6)
    parser.add_argument('--scale', type=int, default=3)
    parser.add_argument('--device', default='cpu')
    args = parser.parse_args()
    try:
        check_device(args.device)
    except ValueError as err:
        parser.error(f'--device: {err}')
    cfg = Config.fromfile(args.config)
    pred_png = osp.join(args.work_dir, 'predictions.png')
    loss_png = osp.join(args.work_dir, 'losses.png')
    draw_predictions(cfg, args.checkpoint, pred_png, args.num_images,
                     args.scale, args.device)
    plot_losses(cfg, args.work_dir, loss_png)
    print(f'Predictions: {pred_png}\nLosses:      {loss_png}')


if __name__ == '__main__':
    main()
