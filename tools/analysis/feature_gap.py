"""Generated against real features, class by class: does G's feature of a
class look like the real features of that class, and does the final
classifier C read it as that class?

    python tools/analysis/feature_gap.py CONFIG CHECKPOINT [--max-images N] \\
        [--samples N] [--cfg-options KEY=VALUE ...]

Real: ``F_x`` (the features C sees; the model in eval mode) at the labelled
pixels of the test set (labels resized with nearest), at most ``--samples``
per class drawn at random. Generated: ``G(M(w_c) ⊕ z)``, ``z ~ N(0, I)``,
``--samples`` per class, G in training mode (its dropout on, as when C
learnt from it in the transfer stage, paper eq. 8). Per class:

* ``C real`` / ``C generated``: C's accuracy (argmax over all classes, no
  calibration) on the class's real and on its generated features;
* ``cos``: cosine of the generated mean with the real mean of the class,
  both centred on the mean of the real class means (the features are
  sigmoid outputs, all positive: uncentred, every pair of means has a
  cosine near 1);
* ``nearest real``: the class whose centred real mean is nearest (cosine)
  to the centred generated mean: a generated "car" nearest to real
  "pavement" is where the transfer teaches C a wrong picture of the
  class;
* ``gap / spread``: distance of the two means over the real features'
  spread (root mean squared distance to their mean).

Classes with no labelled pixel in the test images get ``–`` for what
needs real features. The last line is the rows as json.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from mmengine.dataset import pseudo_collate

from mmseg_sign.apis.inference import model_and_test_set
from mmseg_sign.utils.cli import CfgOptionsAction


def real_features(model,
                  dataset,
                  max_images: int,
                  samples: int,
                  num_classes: int,
                  seed: int = 0) -> dict:
    """``{class: [n, channels]}``: ``F_x`` at the labelled pixels of the
    first ``max_images`` test images, at most ``samples`` per class drawn
    without replacement (generator of ``seed``)."""
    feats, labels = [], []
    model.eval()
    for i in range(min(len(dataset), max_images)):
        data = model.data_preprocessor(pseudo_collate([dataset[i]]), False)
        with torch.no_grad():
            fx = model.extract_inference_feat(data['inputs'])[0]
        seg = data['data_samples'][0].gt_sem_seg.data[None].float()
        label = F.interpolate(
            seg, size=fx.shape[2:], mode='nearest')[0, 0].long().flatten()
        keep = label < num_classes  # not the ignore index
        feats.append(fx[0].flatten(1).T[keep])
        labels.append(label[keep])
    feats, labels = torch.cat(feats), torch.cat(labels)
    g = torch.Generator().manual_seed(seed)
    out = {}
    for c in range(num_classes):
        idx = (labels == c).nonzero()[:, 0]
        if len(idx):
            pick = torch.randperm(len(idx), generator=g)[:samples]
            out[c] = feats[idx[pick]]
    return out


def generated_features(head,
                       num_classes: int,
                       samples: int,
                       seed: int = 0) -> dict:
    """``{class: [samples, channels]}``: ``G(M(w_c) ⊕ z)``, ``z ~ N(0, I)``
    from a generator of ``seed``, G in training mode (dropout on)."""
    g = torch.Generator().manual_seed(seed)
    was_training = head.generator.training
    head.generator.train()
    torch.manual_seed(seed)  # G's dropout masks
    out = {}
    try:
        with torch.no_grad():
            for c in range(num_classes):
                z = torch.randn(samples, head.latent_channels, generator=g)
                labels = torch.full((samples, ), c, dtype=torch.long)
                out[c] = head.generate(labels, z)
    finally:
        head.generator.train(was_training)
    return out


def gap_rows(real: dict, generated: dict, classify, classes, unseen) -> list:
    """One dict per class (see the module's docstring); ``classify`` maps
    features ``[n, channels]`` to logits ``[n, K]``."""
    means = {c: f.mean(0) for c, f in real.items()}
    order = sorted(means)
    stacked = torch.stack([means[c] for c in order]) if order else None
    centre = stacked.mean(0) if order else 0
    rows = []
    for c, name in enumerate(classes):
        fake = generated[c]
        row = {
            'class': name,
            'split': 'unseen' if name in unseen else 'seen',
            'C generated':
            (classify(fake).argmax(1) == c).float().mean().item()
        }
        gen_mean = fake.mean(0)
        if c in real:
            row['C real'] = (classify(real[c]).argmax(1) == c).float() \
                .mean().item()
            row['real pixels'] = len(real[c])
            row['cos'] = F.cosine_similarity(gen_mean - centre,
                                             means[c] - centre, 0).item()
            spread = (real[c] - means[c]).pow(2).sum(1).mean().sqrt()
            row['gap / spread'] = ((gen_mean - means[c]).norm() /
                                   spread.clamp(min=1e-12)).item()
        if stacked is not None:
            sims = F.cosine_similarity((gen_mean - centre)[None],
                                       stacked - centre, 1)
            row['nearest real'] = classes[order[sims.argmax().item()]]
        rows.append(row)
    return rows


def markdown(rows: list) -> str:
    cols = [
        'class', 'split', 'real pixels', 'C real', 'C generated', 'cos',
        'nearest real', 'gap / spread'
    ]
    pct = {'C real', 'C generated'}

    def cell(row, col):
        if col not in row:
            return '–'
        value = row[col]
        if col in pct:
            return f'{100 * value:.1f} %'
        return f'{value:.3f}' if isinstance(value, float) else str(value)

    lines = ['| ' + ' | '.join(cols) + ' |', '|' + '---|' * len(cols)]
    lines += ['| ' + ' | '.join(cell(r, c) for c in cols) + ' |' for r in rows]
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--max-images', type=int, default=60)
    parser.add_argument(
        '--samples',
        type=int,
        default=2000,
        help='features per class, real and generated')
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='e.g. the test set: test_dataloader.dataset.'
        'ann_file=splits/train_held-out.txt')
    args = parser.parse_args()
    for name in ('max_images', 'samples'):
        if getattr(args, name) < 1:
            parser.error(f'--{name.replace("_", "-")} must be >= 1.')
    _, model, dataset = model_and_test_set(args.config, args.checkpoint,
                                           args.cfg_options)
    head = model.decode_head
    if getattr(head, 'generator', None) is None:
        parser.error(f'{args.config}: its head ({type(head).__name__}) has '
                     'no generator G; this tool compares generated with real '
                     'features (SIGN, CaGNet, ZS3Net heads).')
    classes = list(dataset.metainfo['classes'])
    unseen = set(dataset.metainfo.get('unseen_classes', ()))
    real = real_features(model, dataset, args.max_images, args.samples,
                         len(classes))
    generated = generated_features(head, len(classes), args.samples)
    head.eval()
    with torch.no_grad():
        rows = gap_rows(real, generated, head.classify, classes, unseen)
    print(markdown(rows))
    print(json.dumps(rows))


if __name__ == '__main__':
    main()
