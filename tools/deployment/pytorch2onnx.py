# Copyright (c) OpenMMLab. All rights reserved. Adapted for mmseg-sign.
"""Export a trained SIGN model to ONNX (and check it with ONNX Runtime).

    pip install 'mmseg-sign[deploy]'     # onnx, onnxscript, onnxruntime
    python tools/deployment/pytorch2onnx.py configs/sign/sign_toy.py \\
        work_dirs/sign_toy/iter_1400.pth --out sign_toy.onnx --dynamic \\
        --verify

The graph is the inference path of the model: backbone → SIM (``z = mu``,
eval mode) → C over all (seen + unseen) classes, with the class table and
the seen/unseen split of the checkpoint baked in (and the head's
``calibration``, if set). Its input ``img`` is the image as
``LoadImageFromFile`` (and the test pipeline's resizing, if any) gives it:
float, 0-255, BGR, ``N × 3 × H × W``; the model's data preprocessor
(channel order, mean / std) runs inside the graph. Its output is
``logits`` (``N × K × H × W``, bilinearly resized to the input size as
mmseg's ``EncoderDecoder.inference`` does) or, with ``--output seg``,
``seg`` (``N × H × W`` int64 class indices, the argmax).

``--shape H W`` fixes the input size (default: the data preprocessor's
``size``, i.e. the crop size); ``--dynamic`` makes batch, height and width
dynamic (``--shape`` is then only the example traced). ``--verify`` runs
the test set (``--verify-images`` of them) through PyTorch and ONNX Runtime
(CPU) and prints the largest absolute logit difference and the argmax
agreement; it fails below ``--min-agreement`` percent.
"""
import argparse

from mmengine.config import Config

from mmseg_sign.deployment.onnx import (EXPORTERS, OUTPUTS, ExportError,
                                        compare, default_shape, export,
                                        load_model, test_images)
from mmseg_sign.utils.atomic import check_output_file, dataset_folders
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Export a SIGN segmentor (backbone, SIM, C) to ONNX')
    parser.add_argument('config', help='config file of the model')
    parser.add_argument('checkpoint', help='checkpoint file')
    parser.add_argument('--out', required=True, help='output .onnx file')
    parser.add_argument(
        '--shape',
        type=int,
        nargs=2,
        metavar=('H', 'W'),
        help="input height and width (default: the data preprocessor's "
        '`size`, the crop size); with --dynamic only the traced example')
    parser.add_argument(
        '--dynamic',
        action='store_true',
        help='dynamic batch size, height and width')
    parser.add_argument(
        '--output',
        choices=OUTPUTS,
        default='logits',
        help='`logits`: N x K x H x W class logits (default); `seg`: the '
        'N x H x W label map (argmax)')
    parser.add_argument(
        '--opset',
        type=int,
        default=None,
        help='ONNX opset (default: 17 with the torchscript exporter, 18 '
        'with dynamo)')
    parser.add_argument(
        '--exporter',
        choices=EXPORTERS,
        default='torchscript',
        help="torch.onnx's exporter: `torchscript` (default; fast, the one "
        "mmdeploy uses) or `dynamo` (torch.export's, PyTorch's default "
        'since 2.9; needs onnxscript)')
    parser.add_argument(
        '--verify',
        action='store_true',
        help='compare ONNX Runtime (CPU) with PyTorch on the test set')
    parser.add_argument(
        '--verify-images',
        type=int,
        default=0,
        help='images of the test set to verify on (default 0: all)')
    parser.add_argument(
        '--min-agreement',
        type=float,
        default=99.9,
        help='--verify fails below this argmax agreement in percent '
        '(default 99.9)')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='override config settings, xxx=yyy (as tools/test.py)')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    args = parser.parse_args(argv)
    if args.shape is not None and min(args.shape) < 1:
        parser.error(f'--shape H W must be positive, got {args.shape}.')
    return args


# ----------------------------------------------------------------- model
def main(argv=None) -> dict:
    args = parse_args(argv)
    check_output_file(
        args.out, {
            'checkpoint': args.checkpoint,
            'config': args.config
        },
        'model.onnx',
        force=True)
    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    table = cfg.model.get('decode_head', {}).get('class_embeddings')
    check_output_file(args.out, {'class-embedding table': table
                                 if isinstance(table, str) else None,
                                 # --verify reads the test images
                                 **(dataset_folders(
                                     cfg.test_dataloader.dataset)
                                    if args.verify else {})},
                      'model.onnx', force=args.force)
    model = load_model(cfg, args.checkpoint)
    shape = tuple(args.shape) if args.shape else default_shape(model)
    export(model, args.out, shape, args.dynamic, args.output, args.opset,
           args.exporter)
    kind = 'dynamic (N, H, W; traced at {}x{})'.format(*shape) \
        if args.dynamic else 'fixed 1x3x{}x{}'.format(*shape)
    print(f'Wrote {args.out}: input img {kind}, float BGR 0-255; output '
          f'{args.output}; {model.decode_head.num_classes} classes.')
    result = {}
    if args.verify:
        result = compare(model, args.out, test_images(cfg, args.verify_images),
                         args.output)
        diff = f"max abs logit difference {result['max_abs_diff']:.3g}, " \
            if args.output == 'logits' else ''
        print(f"ONNX Runtime vs PyTorch on {result['images']} test images "
              f"({result['pixels']} pixels, {result['skipped']} skipped): "
              f"{diff}argmax agreement {result['agreement']:.4f} %")
        if result['agreement'] < args.min_agreement:
            raise SystemExit(
                f"argmax agreement {result['agreement']:.4f} % is below "
                f'--min-agreement {args.min_agreement} %.')
    return result


if __name__ == '__main__':
    try:
        main()
    except (ExportError, ImportError, ValueError) as error:
        raise SystemExit(f'pytorch2onnx: error: {error}')
