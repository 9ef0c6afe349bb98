"""Plot the AST loss weight (paper eq. 16) against the teacher's confidence.

    python tools/analysis/plot_ast_weights.py --out docs/ast_weights.png

For one image whose pseudo-labelled pixels have confidences spread over
[0, 1], ``w(p) = exp((p - p_max) / T)``: small T keeps only the most
confident pixels (ST-like), large T weighs all of them about equally.
"""
import argparse

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from mmseg_sign.models.losses import annealed_weights  # noqa: E402
from mmseg_sign.utils.atomic import atomic_write  # noqa: E402
from mmseg_sign.utils.atomic import check_output_file  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        '--temperatures',
        type=float,
        nargs='+',
        default=[0.1, 0.25, 0.5, 1.0, 2.0, 5.0])
    parser.add_argument('--out', default='docs/ast_weights.png')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    args = parser.parse_args()
    try:  # a folder, or a place nothing can be written (/proc), first
        check_output_file(args.out, {}, 'ast_weights.png', force=args.force)
    except ValueError as err:
        parser.error(str(err))
    bad = [t for t in args.temperatures if not t > 0]
    if bad:
        parser.error(f'--temperatures must be > 0 (eq. 16 divides by T), '
                     f'got {bad}.')
    confidence = torch.linspace(0, 1, 201)
    fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=120)
    for t in args.temperatures:
        ax.plot(
            confidence, annealed_weights(confidence, t), label=f'T = {t:g}')
    ax.set_xlabel('teacher confidence p of a pseudo label')
    ax.set_ylabel('loss weight w (max 1)')
    ax.set_title('Annealed self-training weights, eq. 16')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(args.out, fig.savefig)
    print(f'Wrote {args.out}')


if __name__ == '__main__':
    main()
