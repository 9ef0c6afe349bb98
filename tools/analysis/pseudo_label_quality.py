"""How good are the self-training pseudo labels? The teacher at the start
of self-training, on the training images.

    python tools/analysis/pseudo_label_quality.py CONFIG CHECKPOINT \
        [--max-images N] [--out quality.json] [--cfg-options ...]

CHECKPOINT is the model when self-training starts (the teacher: e.g.
``iter_1000.pth``, the last of ``configs/sign/sign_toy_transfer-only.py``,
whose plan is ``sign_toy.py``'s up to the end of transfer). Every training
image is read whole with the test pipeline (no crop, no flip) and its true
labels; the unseen classes are then ignored as the training pipeline does
(``MaskUnseenClasses``) and the pseudo labels are made exactly as the config's
``self_train`` stage makes them (its mode, temperature, top_p, top_k,
candidates: :func:`mmseg_sign.models.utils.pseudo_label_image`;
``max_pseudo_ratio`` rescales a whole batch and is not applied here).

Printed (and written to ``--out`` as JSON): of the pseudo-labelled pixels,
the share on unseen objects and on void (pixels no class labels); their
accuracy against the true labels on unseen objects; how many unseen-object
pixels get a pseudo label (coverage); and the distribution of the AST
weights (eq. 16) for each group: unseen objects labelled with the right
class, with a wrong class, and void. The weighted shares say how much of
self-training's pseudo-label loss teaches the right class.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from mmengine.config import Config
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope

from mmseg_sign.evaluation.pseudo_label_quality import GROUPS  # noqa: F401
from mmseg_sign.evaluation.pseudo_label_quality import (pseudo_label_groups,
                                                        summarise)
from mmseg_sign.utils.atomic import (atomic_write, check_output_file,
                                     dataset_folders)
from mmseg_sign.utils.cli import CfgOptionsAction, merge_cfg_options


def self_train_stage(cfg: Config) -> dict:
    """The config's ``self_train`` stage with every option filled in."""
    from mmseg_sign.apis.refit import plan_stage
    stage = plan_stage(cfg, 'self_train')
    if stage is not None:
        return stage
    raise SystemExit('error: the config has no self_train stage in '
                     'train_cfg.stages; use a config that self-trains '
                     '(e.g. configs/sign/sign_toy.py).')


def _dump_json(report: dict, path: str) -> None:
    with open(path, 'w') as f:
        json.dump(report, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument(
        'checkpoint',
        help='the model when self-training '
        'starts (the teacher)')
    parser.add_argument('--max-images', type=int, default=None)
    parser.add_argument('--out', help='write the report as JSON here')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction)
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    args = parser.parse_args()
    from mmseg.registry import DATASETS

    import mmseg_sign  # noqa: F401  (registers the project's modules)
    from mmseg_sign.models.utils import pseudo_label_image

    cfg = Config.fromfile(args.config)
    merge_cfg_options(cfg, args.cfg_options)
    if args.out:  # never onto the config, checkpoint or data it reads
        try:
            check_output_file(
                args.out, {
                    'config': args.config,
                    'checkpoint': args.checkpoint,
                    **dataset_folders(cfg.train_dataloader.dataset)
                },
                'pseudo_labels.json',
                force=args.force)
        except ValueError as err:
            raise SystemExit(f'error: {err}') from None
    init_default_scope(cfg.get('default_scope', 'mmseg'))
    stage = self_train_stage(cfg)
    from mmseg_sign.apis.inference import init_model_checked
    from mmseg_sign.engine.hooks import CheckpointMismatchError
    try:
        model = init_model_checked(cfg, args.checkpoint)
    except CheckpointMismatchError as err:
        raise SystemExit(f'error: {err}') from None
    head = model.decode_head
    ds_cfg = cfg.train_dataloader.dataset.copy()
    ds_cfg.pipeline = cfg.test_dataloader.dataset.pipeline  # whole, true
    dataset = DATASETS.build(ds_cfg)
    unseen = torch.tensor(dataset.unseen_class_ids, dtype=torch.long)
    if not len(unseen):
        raise SystemExit('error: the training dataset has no unseen classes.')
    ignore = head.ignore_index
    counts = dict(unseen=0, right=0, wrong=0, void=0)
    weights = {g: [] for g in GROUPS}
    n = len(dataset) if args.max_images is None else min(
        len(dataset), args.max_images)
    for i in range(n):
        data = model.data_preprocessor(pseudo_collate([dataset[i]]), False)
        sample = data['data_samples'][0]
        with torch.no_grad():
            logits = head(model.extract_feat(data['inputs']))
            logits = F.interpolate(
                logits,
                size=data['inputs'].shape[2:],
                mode='bilinear',
                align_corners=head.align_corners)
        true = sample.gt_sem_seg.data[0]
        h, w = true.shape
        probs = logits[0, :, :h, :w].softmax(0)
        train_label = torch.where(
            torch.isin(true, unseen), torch.full_like(true, ignore), true)
        valid = torch.ones_like(true, dtype=torch.bool)
        target, weight, _ = pseudo_label_image(probs, train_label, unseen,
                                               valid, stage['mode'],
                                               stage['temperature'],
                                               stage['top_p'], ignore,
                                               stage['top_k'],
                                               stage['candidates'])
        masks = pseudo_label_groups(target, true, train_label, unseen, valid,
                                    ignore)
        for key, mask in masks.items():
            counts[key] += int(mask.sum())
            if key in weights:
                weights[key].append(weight[mask])
    report = dict(
        config=args.config,
        checkpoint=args.checkpoint,
        images=n,
        mode=stage['mode'],
        temperature=stage['temperature'],
        candidates=stage['candidates'],
        **summarise(counts, weights))
    print(f"pseudo labels of {args.checkpoint} on {n} training images "
          f"(mode {stage['mode']}, T = {stage['temperature']}, candidates "
          f"{stage['candidates']}):")
    print(f"  pseudo-labelled pixels: {report['pseudo_pixels']}, "
          f"{100 * report['share_on_unseen']:.1f} % on unseen objects, "
          f"{100 * report['share_on_void']:.1f} % on void")
    print(f"  accuracy on unseen objects: "
          f"{100 * report['accuracy_on_unseen']:.1f} %; coverage of unseen "
          f"objects: {100 * report['coverage_of_unseen']:.1f} %")
    print(f"  share of the pseudo-label weight: right class "
          f"{100 * report['weighted_share_right']:.1f} %, void "
          f"{100 * report['weighted_share_void']:.1f} %")
    print('  weights    pixels    mean     q10     q50     q90')
    for g in GROUPS:
        s = report['weights'][g]
        print(f"  {g:<8}{s['pixels']:>9} {s['mean']:7.3f} {s['q10']:7.3f} "
              f"{s['q50']:7.3f} {s['q90']:7.3f}")
    if args.out:
        atomic_write(args.out, lambda tmp: _dump_json(report, tmp))
    print(json.dumps({k: v for k, v in report.items() if k != 'weights'}))


if __name__ == '__main__':
    main()
