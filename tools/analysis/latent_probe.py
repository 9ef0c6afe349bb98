"""Does the SIM's latent code carry information? Linear probes of ``mu``
and of the sampled ``z``.

    python tools/analysis/latent_probe.py CONFIG CHECKPOINT [--max-images N] \\
        [--cfg-options KEY=VALUE ...]

Runs the model in eval mode on the test set and takes, at every labelled
pixel of the feature map (labels resized with nearest), ``mu`` and a
training-mode sample ``z = mu + ε·exp(logvar / 2)`` (what G is fed). For
each, a multinomial logistic regression is fitted on the pixels of the
first half of the images; the accuracy on the second half is printed next
to chance (the most frequent class of that half), with the signal-to-noise
ratio ``mean |mu| / mean σ``. ``mu`` can be linearly informative however
small it is (the probe standardises its input); ``z`` is informative only
if ``mu`` stands out of the noise σ.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from mmengine.dataset import pseudo_collate

from mmseg_sign.apis.inference import model_and_test_set
from mmseg_sign.utils.cli import CfgOptionsAction


def latent_pixels(model, dataset, max_images):
    """``[(mu [n, L], z [n, L], sigma [n, L], labels [n]) per image]`` at
    feature resolution."""
    out = []
    g = torch.Generator().manual_seed(0)
    for i in range(min(len(dataset), max_images)):
        data = model.data_preprocessor(pseudo_collate([dataset[i]]), False)
        with torch.no_grad():
            _, mu, logvar, _ = model.extract_feat(data['inputs'])[:4]
        seg = data['data_samples'][0].gt_sem_seg.data[None].float()
        labels = F.interpolate(
            seg, size=mu.shape[2:], mode='nearest')[0, 0].long().flatten()
        mu, sigma = mu[0].flatten(1).T, torch.exp(0.5 * logvar[0]).flatten(1).T
        z = mu + sigma * torch.randn(mu.shape, generator=g)
        keep = labels != 255
        out.append((mu[keep], z[keep], sigma[keep], labels[keep]))
    return out


def linear_probe(train_x,
                 train_y,
                 test_x,
                 test_y,
                 num_classes,
                 steps: int = 200):
    """Accuracy of a logistic regression (LBFGS, standardised inputs)."""
    mean, std = train_x.mean(0), train_x.std(0).clamp(min=1e-6)
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
    linear = torch.nn.Linear(train_x.shape[1], num_classes)
    opt = torch.optim.LBFGS(
        linear.parameters(), max_iter=steps, line_search_fn='strong_wolfe')

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(linear(train_x), train_y) + \
            1e-4 * linear.weight.pow(2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        return (linear(test_x).argmax(1) == test_y).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--max-images', type=int, default=50)
    parser.add_argument(
        '--cfg-options',
        nargs='+',
        action=CfgOptionsAction,
        help='e.g. the test set: test_dataloader.dataset.'
        'ann_file=splits/train_held-out.txt')
    args = parser.parse_args()
    if args.max_images < 2:  # half fits the probe, half scores it
        parser.error(f'--max-images must be 2 or more (half of the images '
                     f'fit the probe, half score it), got {args.max_images}')
    _, model, dataset = model_and_test_set(args.config, args.checkpoint,
                                           args.cfg_options)
    pixels = latent_pixels(model, dataset, args.max_images)
    half = len(pixels) // 2
    mu, z, sigma, labels = (torch.cat(t) for t in zip(*pixels))
    n_train = sum(len(p[3]) for p in pixels[:half])
    num_classes = len(dataset.metainfo['classes'])
    test_y = labels[n_train:]
    result = dict(
        chance=torch.bincount(test_y, minlength=num_classes).max().item() /
        len(test_y),
        mu_abs_mean=mu.abs().mean().item(),
        sigma_mean=sigma.mean().item(),
        pixels=len(labels))
    for name, x in (('mu', mu), ('z', z)):
        result[f'{name}_probe_accuracy'] = linear_probe(
            x[:n_train], labels[:n_train], x[n_train:], test_y, num_classes)
    result['snr'] = result['mu_abs_mean'] / result['sigma_mean']
    print(json.dumps(result))


if __name__ == '__main__':
    main()
