"""SIGNHead losses on small shapes."""
import pytest
import torch
from mmengine.structures import PixelData

from mmseg.registry import MODELS
from mmseg.structures import SegDataSample


def build_head(path, **kwargs):
    cfg = dict(type='SIGNHead', in_channels=8, channels=8, num_classes=5,
               class_embeddings=path, latent_channels=4,
               generator_hidden=(16, ), discriminator_hidden=(16, ),
               unseen_classes=['c3', 'c4'], mmd_max_pixels=10)
    cfg.update(kwargs)
    return MODELS.build(cfg)


def samples(labels):
    out = []
    for label in labels:
        s = SegDataSample()
        s.gt_sem_seg = PixelData(data=label[None])
        s.set_metainfo(dict(img_shape=label.shape, pad_shape=label.shape))
        out.append(s)
    return out


def features(b=2, h=4, w=6):
    return (torch.randn(b, 8, h, w, requires_grad=True),
            torch.randn(b, 4, h, w, requires_grad=True),
            torch.randn(b, 4, h, w, requires_grad=True))


def test_losses_finite_and_zero_without_labelled_pixels(embedding_table):
    head = build_head(embedding_table[0])
    ignored = samples([torch.full((8, 12), 255, dtype=torch.long)] * 2)
    feats = features()
    seg = head.loss_segmentation(feats, ignored)
    assert seg['loss_ce'].item() == 0.0 and seg['loss_kld'].item() == 0.0
    gen, real, fake = head.loss_generator(feats, ignored)
    assert gen['loss_mmd'].item() == 0.0
    assert real.shape[0] == fake.shape[0] == 0
    dis = head.loss_discriminator(real, fake)
    for v in [*gen.values(), *dis.values()]:
        assert torch.isfinite(v)


def test_losses_with_labels(embedding_table):
    head = build_head(embedding_table[0])
    labels = torch.randint(0, 3, (2, 8, 12))
    labels[:, :2] = 255
    feats = features()
    seg = head.loss_segmentation(feats, samples(labels))
    gen, real, fake = head.loss_generator(feats, samples(labels))
    # at most mmd_max_pixels per class (3 seen classes present)
    assert real.shape[0] <= 30 and fake.shape == real.shape
    assert gen['loss_mmd'] > 0
    for v in [*seg.values(), *gen.values()]:
        assert torch.isfinite(v)
    trans = head.loss_transfer(feats, samples(labels))
    assert set(trans) >= {'loss_ce', 'loss_ce_synth'}


def test_pseudo_labels_overweight_unseen(embedding_table):
    head = build_head(embedding_table[0], synth_unseen_ratio=0.6)
    torch.manual_seed(0)
    labels = head.sample_pseudo_labels(20000, 'cpu')
    freq = torch.bincount(labels, minlength=5).float() / 20000
    # unseen c3, c4 share 0.6; seen c0..c2 share 0.4
    torch.testing.assert_close(
        freq, torch.tensor([0.4 / 3] * 3 + [0.3, 0.3]), atol=0.015, rtol=0)


def test_embedding_table_must_match(embedding_table, tmp_path):
    path, names = embedding_table
    with pytest.raises(ValueError, match='num_classes=6'):
        build_head(path, num_classes=6)
    head = build_head(path, unseen_classes=None)
    with pytest.raises(ValueError, match='differ from the class-embedding'):
        head.set_class_split(['c4'], ['c0', 'c1', 'x', 'c3', 'c4'])
    head.set_class_split(['c4'], names)
    assert head.unseen_ids.tolist() == [4]


def test_calibration_lowers_seen_scores(embedding_table):
    head = build_head(embedding_table[0], calibration=0.5).eval()
    feats = features(1, 3, 3)
    metas = [dict(img_shape=(3, 3), pad_shape=(3, 3))]
    cal = head.predict(feats, metas, dict())
    head.calibration = 0.0
    plain = head.predict(feats, metas, dict())
    diff = plain - cal
    torch.testing.assert_close(diff[0, :3], torch.full_like(diff[0, :3],
                                                            0.5))
    torch.testing.assert_close(diff[0, 3:], torch.zeros_like(diff[0, 3:]))
