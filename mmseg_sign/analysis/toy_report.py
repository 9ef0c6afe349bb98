"""Pictures of a SIGN run: predictions next to the ground truth (mmseg's
``SegLocalVisualizer``; unseen classes named in red and outlined in white)
and the losses of every stage (one band per stage)
(``tools/analysis/toy_report.py`` is the command line)."""
import glob
import json
import os.path as osp

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from mmengine.registry import init_default_scope  # noqa: E402
from mmengine.structures import PixelData  # noqa: E402
from mmseg.apis import inference_model  # noqa: E402
from mmseg.registry import DATASETS, VISUALIZERS  # noqa: E402
from mmseg.structures import SegDataSample  # noqa: E402

from ..apis.inference import init_model_checked  # noqa: E402
from ..structures.stage_plan import StagePlan  # noqa: E402

STAGE_COLOURS = dict(train='#dde8f6', transfer='#f8e3cf', self_train='#dff2df')


def stage_plan(cfg):
    """The config's stages (options filled in); empty without a plan.

    Args:
        cfg (Config): a config.

    Returns:
        list[dict]: the stages.
    """
    plan = StagePlan.from_config(cfg)
    return plan.stages if plan is not None else []


def upscale(array, factor):
    """Nearest-neighbour upscaling of an image or label map.

    Args:
        array (np.ndarray): ``[H, W]`` or ``[H, W, C]``.
        factor (int): the scale.

    Returns:
        np.ndarray: ``[H·factor, W·factor, ...]``.
    """
    return np.repeat(np.repeat(array, factor, axis=0), factor, axis=1)


def unseen_outline(label, unseen_ids):
    """Boundary pixels of unseen-class regions ``[H, W]`` bool.

    Args:
        label (np.ndarray): a label map ``[H, W]``.
        unseen_ids (Sequence[int]): the unseen classes.

    Returns:
        np.ndarray: bool ``[H, W]``.
    """
    mask = np.isin(label, unseen_ids)
    edge = np.zeros_like(mask)
    edge[1:, :] |= mask[1:, :] != mask[:-1, :]
    edge[:, 1:] |= mask[:, 1:] != mask[:, :-1]
    return edge & mask


def draw_predictions(cfg, checkpoint, out_file, num_images, scale, device):
    """One run's predictions next to the ground truth (see
    :func:`draw_comparison`).

    Args:
        cfg (Config): the run's config.
        checkpoint (str): its checkpoint.
        out_file (str): the picture.
        num_images (int): rows.
        scale (int): upscaling.
        device (str): where the model runs.
    """
    draw_comparison([('prediction', cfg, checkpoint)], cfg, out_file,
                    num_images, scale, device)


def draw_comparison(models,
                    data_cfg,
                    out_file,
                    num_images=4,
                    scale=None,
                    device='cpu'):
    """Test images spread over the test set, their ground truth and each
    model's prediction side by side (the paper's qualitative figure), unseen
    classes outlined in white and named in red in the legend; predictions
    are drawn on the scored (non-void) pixels.

    Args:
        models (list[tuple[str, Config | str, str]]): ``(label, config,
            checkpoint)`` per column.
        data_cfg (Config): the config whose test dataset is drawn.
        out_file (str): the picture to write.
        num_images (int): rows.
        scale (int, optional): pixel upscaling (default: to about 384
            pixels of width, e.g. 4 for the 96-pixel toy test images).
        device (str): where the models run.
    """
    init_default_scope(data_cfg.get('default_scope', 'mmseg'))
    dataset = DATASETS.build(data_cfg.test_dataloader.dataset)
    meta = dataset.metainfo
    classes = list(meta['classes'])
    unseen_ids = [classes.index(c) for c in meta['unseen_classes']]
    visualizer = VISUALIZERS.build(
        dict(type='SegLocalVisualizer', name='toy_comparison', alpha=0.6))
    visualizer.dataset_meta = dict(classes=classes, palette=meta['palette'])
    count = min(num_images, len(dataset))
    # spread over the test set (consecutive video frames look alike)
    indices = np.linspace(0, len(dataset) - 1, count).round().astype(int)
    samples = [dataset[int(i)] for i in indices]
    if scale is None:
        scale = max(1, 384 // samples[0]['inputs'].shape[-1])
    preds = [[] for _ in range(count)]
    for _, cfg, checkpoint in models:
        model = init_model_checked(
            cfg, checkpoint, device, dataset_classes=classes)
        for row, index in enumerate(indices):
            result = inference_model(
                model,
                dataset.get_data_info(int(index))['img_path'])
            preds[row].append(result.pred_sem_seg.data[0].cpu().numpy())
        del model
    rows = []
    for sample, row_preds in zip(samples, preds):
        gt = sample['data_samples'].gt_sem_seg.data[0].numpy()
        image = upscale(sample['inputs'].permute(1, 2, 0).numpy()[..., ::-1],
                        scale)
        row = [image]
        # predictions where the ground truth is labelled: void (255) pixels
        # are not scored, and the image shows through there as in the GT
        for label in [gt] + [np.where(gt == 255, 255, p) for p in row_preds]:
            big = upscale(label, scale)
            drawn_sample = SegDataSample(
                gt_sem_seg=PixelData(data=big[None].astype(np.int64)))
            visualizer.add_datasample(
                'sample',
                np.ascontiguousarray(image),
                drawn_sample,
                draw_gt=True,
                draw_pred=False,
                with_labels=False)
            drawn = visualizer.get_image().copy()
            drawn[unseen_outline(big, unseen_ids)] = 255
            row += [np.full((big.shape[0], 4, 3), 255, np.uint8), drawn]
        rows.append(np.concatenate(row, axis=1))
    grid = np.concatenate([
        np.pad(r, ((0, 4), (0, 0), (0, 0)), constant_values=255) for r in rows
    ],
                          axis=0)
    top = 24  # pixels of column titles above the grid
    fig = plt.figure(
        figsize=(grid.shape[1] / 80 + 2.2, (grid.shape[0] + top) / 80),
        dpi=100)
    ax = fig.add_axes([
        0, 0, grid.shape[1] / (grid.shape[1] + 176),
        grid.shape[0] / (grid.shape[0] + top)
    ])
    ax.imshow(grid)
    ax.axis('off')
    tile = upscale(samples[0]['data_samples'].gt_sem_seg.data[0].numpy(),
                   scale).shape[1]
    for i, title in enumerate(['image', 'ground truth'] +
                              [label for label, _, _ in models]):
        ax.text(
            i * (tile + 4) + tile / 2,
            -6,
            title,
            ha='center',
            va='bottom',
            fontsize=9,
            clip_on=False)
    handles = [
        Patch(
            color=np.array(meta['palette'][i]) / 255,
            label=c + (' (unseen)' if i in unseen_ids else ''))
        for i, c in enumerate(classes)
    ]
    legend = fig.legend(
        handles=handles, loc='center right', fontsize=8, frameon=False)
    for text, i in zip(legend.get_texts(), range(len(classes))):
        if i in unseen_ids:
            text.set_color('red')
            text.set_fontweight('bold')
    fig.savefig(out_file)
    plt.close(fig)


def plot_losses(cfg, work_dir, out_file):
    """Every loss term logged by a run, one band per stage.

    Args:
        cfg (Config): the run's config (its plan).
        work_dir (str): the run's work dir (its logged scalars).
        out_file (str): the picture.
    """
    files = sorted(
        glob.glob(osp.join(work_dir, '*', 'vis_data', 'scalars.json')))
    if not files:
        raise FileNotFoundError(f'No */vis_data/scalars.json in {work_dir}; '
                                'is it the work dir of a training run?')
    series = {}
    for path in files:
        with open(path) as f:
            for line in f:
                record = json.loads(line)
                for key, value in record.items():
                    if key.startswith('loss'):
                        series.setdefault(key, {})[record['step']] = value
    keys = sorted(series)
    fig, axes = plt.subplots(
        len(keys), 1, figsize=(7, 1.3 * len(keys) + 0.6), sharex=True, dpi=100)
    axes = np.atleast_1d(axes)
    start = 0
    for stage in stage_plan(cfg):
        for ax in axes:
            ax.axvspan(
                start,
                start + stage['iters'],
                color=STAGE_COLOURS[stage['name']],
                lw=0)
        axes[0].text(
            start + stage['iters'] / 2,
            1.02,
            stage['name'],
            transform=axes[0].get_xaxis_transform(),
            ha='center',
            fontsize=8)
        start += stage['iters']
    for ax, key in zip(axes, keys):
        steps = sorted(series[key])
        ax.plot(steps, [series[key][s] for s in steps], lw=1)
        ax.set_ylabel(key, fontsize=7, rotation=0, ha='right')
        ax.tick_params(labelsize=7)
        if min(series[key].values()) > 0 and max(series[key].values()) > \
                50 * min(series[key].values()):
            ax.set_yscale('log')
    axes[-1].set_xlabel('iteration')
    fig.tight_layout()
    fig.savefig(out_file)
    plt.close(fig)


def plot_sweep(curves, xlabel, out_file, marks=()):
    """Mean ± std (over runs) of each metric against a swept value, log x
    (docs/toy_results.md's AST temperature curve; the paper's Fig. 5).

    Args:
        curves (dict): ``{label: {value: [metric of each run]}}``.
        xlabel (str): the swept value's name.
        out_file (str): the PNG.
        marks (Sequence[tuple[float, str]]): vertical lines ``(x, label)``
            (e.g. the config's value, the paper's).
    """
    fig, ax = plt.subplots(figsize=(6, 4))
    for label, points in curves.items():
        xs = sorted(points)
        mean = np.array([np.mean(points[x]) for x in xs])
        std = np.array([np.std(points[x]) for x in xs])
        line, = ax.plot(xs, mean, marker='o', label=label)
        ax.fill_between(
            xs, mean - std, mean + std, alpha=0.2, color=line.get_color())
    for x, text in marks:
        ax.axvline(x, color='grey', linestyle=':')
        ax.text(
            x,
            ax.get_ylim()[0],
            f' {text}',
            rotation=90,
            va='bottom',
            fontsize=8,
            color='grey')
    ax.set_xscale('log')
    ax.set_xlabel(xlabel)
    ax.set_ylabel('mIoU (%)')
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_file, dpi=120)
    plt.close(fig)
