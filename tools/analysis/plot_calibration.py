"""Plot the seen-unseen calibration curve that ``GZSLIoUMetric(
calibration_sweep=[...])`` writes (``calibration_sweep.json``): unseen mIoU
against seen mIoU, one point per γ, the point of the best harmonic mIoU
marked.

    python tools/analysis/plot_calibration.py \
        WORK_DIR/TIMESTAMP/calibration/calibration_sweep.json --out curve.png
"""
import argparse
import json
import math
from typing import Optional

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

from mmseg_sign.utils.atomic import atomic_write  # noqa: E402
from mmseg_sign.utils.atomic import check_output_file  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('json', help='calibration_sweep.json of a test run')
    parser.add_argument('--out', required=True, help='output PNG')
    parser.add_argument('--title', default=None)
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    return parser.parse_args()


def plot(data: dict, out: str, title: Optional[str] = None) -> None:
    points = sorted(
        data['points'], key=lambda p: (p['mIoU_seen'], p['mIoU_unseen']))
    seen = [p['mIoU_seen'] for p in points]
    unseen = [p['mIoU_unseen'] for p in points]
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.plot(seen, unseen, 'o-', color='tab:blue', label='sweep')
    for p in points:
        ax.annotate(
            f"{p['gamma']:g}", (p['mIoU_seen'], p['mIoU_unseen']),
            textcoords='offset points',
            xytext=(4, 4),
            fontsize=7)
    best = data.get('calibration_best')
    if best is not None and not (isinstance(best, float) and math.isnan(best)):
        b = min(points, key=lambda p: abs(p['gamma'] - best))
        ax.plot([b['mIoU_seen']], [b['mIoU_unseen']],
                marker='*',
                markersize=16,
                color='tab:red',
                linestyle='none',
                label=f"best hIoU {data['hIoU_best']:.2f} (γ={best:g})")
    ax.set_xlabel('seen mIoU (%)')
    ax.set_ylabel('unseen mIoU (%)')
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.set_title(title or f"calibration sweep, AUSUC {data['AUSUC']:.2f}")
    ax.legend(loc='upper right', fontsize=8)
    fig.tight_layout()
    atomic_write(out, lambda tmp: fig.savefig(tmp, dpi=120))
    plt.close(fig)


def main():
    args = parse_args()
    try:
        check_output_file(
            args.out, {'sweep file': args.json},
            'calibration.png',
            force=args.force)
    except ValueError as err:
        raise SystemExit(f'error: {err}') from None
    with open(args.json) as f:
        data = json.load(f)
    plot(data, args.out, args.title)
    print(f'calibration curve written to {args.out}')


if __name__ == '__main__':
    main()
