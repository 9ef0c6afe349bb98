"""Does the SIM's latent code carry information? A linear probe of ``mu``.

    python tools/analysis/latent_probe.py CONFIG CHECKPOINT [--max-images N]

Runs the model in eval mode (``z = mu``) on the test set, takes ``mu`` at
every labelled pixel of the feature map (labels resized with nearest), fits
a multinomial logistic regression on the pixels of the first half of the
images and reports its accuracy on the second half next to chance (the
most frequent class of that half). ``mu`` that collapsed to the prior
(N(0, I), no information) gives chance accuracy.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from mmengine.config import Config
from mmengine.dataset import pseudo_collate
from mmengine.registry import init_default_scope

from mmseg.apis import init_model
from mmseg.registry import DATASETS


def latent_pixels(model, dataset, max_images):
    """``[(mu [n, L], labels [n]) per image]`` at feature resolution."""
    out = []
    for i in range(min(len(dataset), max_images)):
        data = model.data_preprocessor(pseudo_collate([dataset[i]]), False)
        with torch.no_grad():
            _, mu, _, _ = model.extract_feat(data['inputs'])[:4]
        seg = data['data_samples'][0].gt_sem_seg.data[None].float()
        labels = F.interpolate(seg, size=mu.shape[2:],
                               mode='nearest')[0, 0].long().flatten()
        mu = mu[0].flatten(1).T
        keep = labels != 255
        out.append((mu[keep], labels[keep]))
    return out


def linear_probe(train_x, train_y, test_x, test_y, num_classes,
                 steps: int = 200):
    """Accuracy of a logistic regression (LBFGS, standardised inputs)."""
    mean, std = train_x.mean(0), train_x.std(0).clamp(min=1e-6)
    train_x, test_x = (train_x - mean) / std, (test_x - mean) / std
    linear = torch.nn.Linear(train_x.shape[1], num_classes)
    opt = torch.optim.LBFGS(linear.parameters(), max_iter=steps,
                            line_search_fn='strong_wolfe')

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
    args = parser.parse_args()
    cfg = Config.fromfile(args.config)
    init_default_scope('mmseg')
    model = init_model(cfg, args.checkpoint, device='cpu')
    dataset = DATASETS.build(cfg.test_dataloader.dataset)
    pixels = latent_pixels(model, dataset, args.max_images)
    half = len(pixels) // 2
    train_x, train_y = (torch.cat(t) for t in zip(*pixels[:half]))
    test_x, test_y = (torch.cat(t) for t in zip(*pixels[half:]))
    num_classes = len(dataset.metainfo['classes'])
    acc = linear_probe(train_x, train_y, test_x, test_y, num_classes)
    chance = torch.bincount(test_y, minlength=num_classes).max().item() / \
        len(test_y)
    print(json.dumps(dict(probe_accuracy=acc, chance=chance,
                          mu_abs_mean=train_x.abs().mean().item(),
                          pixels=len(train_y) + len(test_y))))


if __name__ == '__main__':
    main()
