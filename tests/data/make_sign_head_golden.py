"""Write ``tests/data/sign_head_golden.pth``: what SIGN models built by the
code of the current commit compute, for ``tests/test_e2e/test_sign_head_golden.py``.

The committed file was made at commit 0f245bc, before G and D became
registered modules of their own: the test checks that today's
code loads those weights under the same names and computes the same logits,
losses, optimizer groups and seeded initial weights, bit for bit, and the
same gradients to float32 rounding. The gradients were first kept as
digests; their last bits differ between CPUs (AVX-512, where the record was
made, and AVX2), so they are now stored as tensors, computed by the same
0f245bc code on the record's own inputs.

    OMP_NUM_THREADS=1 python tests/data/make_sign_head_golden.py

Two models: the toy segmentor of ``configs/sign/sign_toy.py`` (shared-trunk
layout, C and D on one trunk) and a small ``SIGNHead`` in the ``'linear'``
layout (C a 1x1 conv, D an MLP). The test imports the functions below, so
the numbers are computed the same way on both sides.
"""
import hashlib
import os.path as osp
import sys
import tempfile

import numpy as np
import torch
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from mmengine.structures import PixelData

from mmseg.registry import MODELS
from mmseg.structures import SegDataSample

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
OUT = osp.join(REPO, 'tests', 'data', 'sign_head_golden.pth')
SEED = 0


def digest(tensor):
    """sha256 of a tensor's bytes, dtype and shape (big tensors are
    compared through it)."""
    t = tensor.detach().contiguous().cpu()
    h = hashlib.sha256(f'{t.dtype}{tuple(t.shape)}'.encode())
    h.update(t.numpy().tobytes())
    return h.hexdigest()


def write_toy_table(path, vectors=None):
    """The toy classes with a fixed random 32-d table (or ``vectors``; the
    toy data's own tables are 600-d: 32 keeps the recorded G small)."""
    from mmseg_sign.datasets.toy import ZeroShotToyDataset
    from mmseg_sign.embeddings import save_class_embeddings
    names = list(ZeroShotToyDataset.METAINFO['classes'])
    if vectors is None:
        vectors = np.random.default_rng(SEED).normal(size=(len(names), 32))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    save_class_embeddings(path, names, np.asarray(vectors, np.float32))
    return list(ZeroShotToyDataset.METAINFO['unseen_classes'])


def toy_cfg(table):
    cfg = Config.fromfile(osp.join(REPO, 'configs', 'sign', 'sign_toy.py'))
    cfg.model.decode_head.class_embeddings = table
    return cfg


def linear_head_cfg(table):
    return dict(
        type='SIGNHead',
        in_channels=8,
        channels=8,
        num_classes=10,
        class_embeddings=table,
        latent_channels=4,
        generator_hidden=(16, 12),
        generator_dropout=(0.1, 0.2),
        generator_out_act='sigmoid',
        classifier='linear',
        discriminator_hidden=(16, ),
        dropout_ratio=0.1,
        mmd_max_pixels=20,
        gen_unseen_rate=3.0)


def build(cfg, seed):
    """``MODELS.build`` + ``init_weights`` after ``torch.manual_seed``."""
    torch.manual_seed(seed)
    model = MODELS.build(cfg)
    model.init_weights()
    return model


def samples(labels):
    out = []
    for label in labels:
        s = SegDataSample()
        s.gt_sem_seg = PixelData(data=label[None])
        s.set_metainfo(
            dict(img_shape=tuple(label.shape), pad_shape=tuple(label.shape)))
        out.append(s)
    return out


def seen_labels(shape, unseen_ids, generator):
    """Random label maps of seen classes with ignored (255) stripes."""
    labels = torch.randint(0, 10, shape, generator=generator)
    for u in unseen_ids:
        labels[labels == u] = 255
    labels[..., :3, :] = 255
    return labels


def head_losses(head, feats, data, teacher_logits):
    """Every loss the stages compute on the head, one after the other (the
    RNG runs through them in this order), and the gradients of their sum."""
    out = {}
    seg = head.loss_segmentation(feats, data)
    out.update({f'seg/{k}': v for k, v in seg.items()})
    gen, real, fake, labels = head.loss_generator(feats, data)
    out.update({f'gen/{k}': v for k, v in gen.items()})
    out['gen/real'], out['gen/fake'], out['gen/labels'] = real, fake, labels
    out.update({
        f'dis/{k}': v
        for k, v in head.loss_discriminator(real, fake.detach()).items()
    })
    out['dis/loss_ce_real'] = head.loss_classifier_real(feats[0], data, 0.7)
    out['dis/loss_ce_fake'] = head._cross_entropy(
        head.classify(fake.detach()), labels)
    out.update({
        f'transfer/{k}': v
        for k, v in head.loss_transfer(feats, data, 0.5, 2.0).items()
    })
    targets, weights, stats = head.pseudo_labels(teacher_logits, data, 'AST',
                                                 2.0, 75.0)
    out['st/targets'], out['st/weights'] = targets, weights
    out.update({f'st/{k}': v for k, v in stats.items()})
    out.update({
        f'st_seg/{k}': v
        for k, v in head.loss_segmentation(
            feats, head.with_targets(data, targets), weights=weights).items()
    })
    out.update({
        f'st_cls/{k}': v
        for k, v in head.loss_self_train(feats, targets, weights, 1.0).items()
    })
    total = sum(v for k, v in out.items() if '/loss' in k and v.requires_grad)
    names, params = zip(*head.named_parameters())
    grads = torch.autograd.grad(total, params, allow_unused=True)
    out = {k: v.detach().clone() for k, v in out.items()}
    out.update({
        f'grad/{n}': g.detach().clone()
        for n, g in zip(names, grads) if g is not None
    })
    return out


def run_head(head, rec):
    """``(logits, losses)`` of ``head`` on recorded SIM outputs
    ``rec['feats']`` (changes to the backbone or the SIM do not move the
    head's numbers): logits in eval mode, losses in train mode (seeded)."""
    head.eval()
    with torch.no_grad():
        logits = head(rec['feats'])
    head.train()
    torch.manual_seed(SEED + 4)
    feats = tuple(f.clone().requires_grad_() for f in rec['feats'])
    return logits, head_losses(head, feats, samples(rec['labels']),
                               rec['teacher_logits'])


def optim_groups(model, cfg):
    """The head's parameter names in each optimizer wrapper the config
    builds."""
    wrappers = build_optim_wrapper(model, cfg.optim_wrapper)
    names = {id(p): n for n, p in model.named_parameters()}
    return {
        key: sorted(names[id(p)] for group in w.optimizer.param_groups
                    for p in group['params']
                    if names[id(p)].startswith('decode_head.'))
        for key, w in wrappers.items()
    }


def perturb(module, seed):
    """Move every weight off its initial value, so that a checkpoint load
    (not a seeded build) is what gives the recorded numbers."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    return g


def toy_record(table, unseen):
    cfg = toy_cfg(table)
    # the head's initial weights (built alone: backbone and SIM changes do
    # not move them)
    rec = dict(
        init_state={
            k: digest(v)
            for k, v in build(cfg.model.decode_head,
                              SEED).state_dict().items()
        })
    model = build(cfg.model, SEED)
    g = perturb(model, SEED + 1)
    model.decode_head.set_class_split(unseen)
    # the checkpoint's head part (the rest is not the head's business)
    rec['state'] = {
        k: v.clone()
        for k, v in model.state_dict().items() if k.startswith('decode_head.')
    }
    inputs = torch.rand(2, 3, 64, 64, generator=g)  # normalised images
    with torch.no_grad():
        torch.manual_seed(SEED + 2)  # the SIM samples z in training
        rec['feats'] = model.train().extract_feat(inputs)
    rec['labels'] = seen_labels((2, 32, 32),
                                model.decode_head.unseen_ids.tolist(), g)
    rec['teacher_logits'] = torch.randn(2, 10, 32, 32, generator=g)
    rec['logits'], rec['losses'] = run_head(model.decode_head, rec)
    rec['optim_groups'] = optim_groups(model, cfg)
    return rec


def linear_record(table, unseen):
    head = build(linear_head_cfg(table), SEED)
    rec = dict(init_state={k: digest(v) for k, v in head.state_dict().items()})
    g = perturb(head, SEED + 3)
    head.set_class_split(unseen)
    rec['state'] = {k: v.clone() for k, v in head.state_dict().items()}
    rec['feats'] = (torch.rand(2, 8, 8, 8, generator=g),
                    *(torch.randn(2, 4, 8, 8, generator=g) for _ in range(3)))
    rec['labels'] = seen_labels((2, 16, 16), head.unseen_ids.tolist(), g)
    rec['teacher_logits'] = torch.randn(2, 10, 16, 16, generator=g)
    rec['logits'], rec['losses'] = run_head(head, rec)
    return rec


def main():
    import mmseg_sign  # noqa: F401
    from mmseg.utils import register_all_modules
    from mmseg_sign.embeddings import read_class_embeddings
    register_all_modules(init_default_scope=True)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        table = osp.join(tmp, 'toy_table.npz')
        unseen = write_toy_table(table)
        golden = dict(
            table=torch.from_numpy(read_class_embeddings(table)[1]),
            toy=toy_record(table, unseen),
            linear=linear_record(table, unseen))
    torch.save(golden, OUT)
    print(f'wrote {OUT}')


if __name__ == '__main__':
    sys.exit(main())
