"""SIGNHead losses on small shapes."""
import math

import pytest
import torch
import torch.nn.functional as F
from model_utils import build_head, samples


def features(b=2, h=4, w=6):
    return (torch.rand(b, 8, h, w, requires_grad=True),
            torch.randn(b, 4, h, w, requires_grad=True),
            torch.randn(b, 4, h, w, requires_grad=True),
            torch.randn(b, 4, h, w, requires_grad=True))


def test_losses_finite_and_zero_without_labelled_pixels(embedding_table):
    head = build_head(embedding_table[0])
    ignored = samples([torch.full((8, 12), 255, dtype=torch.long)] * 2)
    feats = features()
    seg = head.loss_segmentation(feats, ignored)
    assert seg['loss_ce'].item() == 0.0 and seg['loss_kld'].item() == 0.0
    gen, real, fake, _ = head.loss_generator(feats, ignored)
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
    gen, real, fake, _ = head.loss_generator(feats, samples(labels))
    # at most mmd_max_pixels per class (3 seen classes present)
    assert real.shape[0] <= 30 and fake.shape == real.shape
    assert gen['loss_mmd'] > 0
    for v in [*seg.values(), *gen.values()]:
        assert torch.isfinite(v)
    trans = head.loss_transfer(feats, samples(labels))
    assert set(trans) >= {'loss_ce', 'loss_ce_synth'}


def test_pseudo_labels_overweight_unseen(embedding_table):
    """The authors' prior: ∝ 1 per seen class, 1 + gen_unseen_rate per
    unseen class (VOC, rate 9: 5·10 / (15 + 50) = 77 % unseen)."""
    head = build_head(embedding_table[0], gen_unseen_rate=4.0)
    torch.manual_seed(0)
    labels = head.sample_pseudo_labels(20000, 'cpu')
    freq = torch.bincount(labels, minlength=5).float() / 20000
    # seen c0..c2: 1/13 each; unseen c3, c4: 5/13 each
    torch.testing.assert_close(
        freq, torch.tensor([1 / 13] * 3 + [5 / 13] * 2), atol=0.015, rtol=0)
    with pytest.raises(ValueError, match='gen_unseen_rate'):
        build_head(embedding_table[0], gen_unseen_rate=None)


def test_pseudo_label_ratio_cap_by_hand(embedding_table):
    """max_pseudo_ratio: the pseudo-labelled pixels' summed weight is
    scaled to at most ratio × the seen-labelled pixel count of the batch;
    seen weights stay 1 (hand-made batch, AST with uniform confidences)."""
    head = build_head(embedding_table[0])
    label = torch.full((2, 4), 255, dtype=torch.long)
    label[0, :2] = torch.tensor([0, 1])  # 2 seen pixels, 6 ignored
    logits = torch.zeros(1, 5, 2, 4)
    logits[0, 3] = 2.0  # c3 is the best unseen class everywhere, p equal
    data = samples([label])
    targets, weights, stats = head.pseudo_labels(logits, data, 'AST', 1.0,
                                                 75.0)
    assert (targets[0][label == 255] == 3).all()
    assert weights.sum() == pytest.approx(2 + 6)  # uniform AST weights 1
    assert stats['st_scale'] == 1
    targets, weights, stats = head.pseudo_labels(
        logits, data, 'AST', 1.0, 75.0, max_pseudo_ratio=0.5)
    # budget 0.5 × 2 seen pixels = 1 for 6 pseudo-labelled pixels
    assert weights[0][label == 255].tolist() == pytest.approx([1 / 6] * 6)
    assert weights[0][label != 255].tolist() == [1.0, 1.0]
    assert stats['st_scale'].item() == pytest.approx(1 / 6)
    assert stats['st_weight'].item() == pytest.approx(1 / 6)
    # under the budget: unchanged
    _, weights, stats = head.pseudo_labels(
        logits, data, 'AST', 1.0, 75.0, max_pseudo_ratio=3.0)
    assert weights.sum() == pytest.approx(8) and stats['st_scale'] == 1


def test_embedding_table_must_match(embedding_table, tmp_path):
    path, names = embedding_table
    with pytest.raises(ValueError, match='num_classes=6'):
        build_head(path, num_classes=6)
    head = build_head(path, unseen_classes=None)
    with pytest.raises(ValueError, match='differ from the class-embedding'):
        head.set_class_split(['c4'], ['c0', 'c1', 'x', 'c3', 'c4'])
    head.set_class_split(['c4'], names)
    assert head.unseen_ids.tolist() == [4]


def test_one_class_name_is_one_class(embedding_table):
    """``held_out_classes='c2'`` / ``unseen_classes='c4'`` name one class
    each (as the dataset's options do), not their characters."""
    import numpy as np
    path, names = embedding_table
    rows = dict(zip(names, np.load(path)['embeddings']))
    head = build_head(
        path, num_classes=4, held_out_classes='c2', unseen_classes='c4')
    assert head.held_out_classes == ('c2', )
    assert head.class_names == ('c0', 'c1', 'c3', 'c4')
    assert head.unseen_ids.tolist() == [3]
    listed = build_head(
        path, num_classes=4, held_out_classes=['c2'], unseen_classes=['c4'])
    assert torch.equal(head.class_embedding, listed.class_embedding)
    assert torch.equal(head.unseen_mask, listed.unseen_mask)
    # the kept rows are the file's rows, c2 left out
    expected = np.stack([rows[n] for n in ('c0', 'c1', 'c3', 'c4')])
    assert np.allclose(head.class_embedding.numpy(), expected)
    with pytest.raises(TypeError, match='held_out_classes'):
        build_head(path, num_classes=4, held_out_classes=[2])


def test_calibration_lowers_seen_scores(embedding_table):
    head = build_head(embedding_table[0], calibration=0.5).eval()
    feats = features(1, 3, 3)
    metas = [dict(img_shape=(3, 3), pad_shape=(3, 3))]
    cal = head.predict(feats, metas, dict())
    head.calibration = 0.0
    plain = head.predict(feats, metas, dict())
    diff = plain - cal
    torch.testing.assert_close(diff[0, :3], torch.full_like(diff[0, :3], 0.5))
    torch.testing.assert_close(diff[0, 3:], torch.zeros_like(diff[0, 3:]))


def naive_mmd(x, y, variances):
    """Biased MMD² written as double loops, kernel Σ_v exp(-d² / (2v))."""

    def k(a, b):
        d2 = sum((u - v)**2 for u, v in zip(a, b))
        return sum(math.exp(-d2 / (2 * v)) for v in variances)

    def mean_k(p, q):
        return sum(k(a, b) for a in p for b in q) / (len(p) * len(q))

    return mean_k(x, x) + mean_k(y, y) - 2 * mean_k(x, y)


@pytest.mark.parametrize('classifier', ['linear', 'shared_trunk'])
def test_generator_sees_the_sim_latent_and_mmd_uses_variances(
        embedding_table, classifier):
    """G's input is cat(M(y), z) with the SIM's own z of the same pixel;
    loss_mmd = β Σ_c MMD²(real_c, fake_c) with variance-named kernels."""
    torch.manual_seed(0)
    head = build_head(
        embedding_table[0],
        classifier=classifier,
        mmd_max_pixels=1000,
        mmd_kernel_variances=(2, 60),
        loss_mmd_weight=3.0).eval()
    labels = torch.randint(0, 3, (2, 4, 6))
    labels[0, 0] = 255
    feats = features()
    gen, real, fake, picked = head.loss_generator(feats, samples(labels))
    flat = labels.flatten()
    idx = torch.cat([(flat == c).nonzero().flatten()
                     for c in flat[flat != 255].unique()])
    assert torch.equal(picked, flat[idx])

    def pix(t):
        return t.detach().permute(0, 2, 3, 1).reshape(-1, t.shape[1])

    torch.testing.assert_close(real, pix(feats[0])[idx])
    torch.testing.assert_close(fake,
                               head.generate(flat[idx],
                                             pix(feats[3])[idx]))
    assert ((fake > 0) & (fake < 1)).all()  # sigmoid output, as F_x
    want = 3.0 * sum(
        naive_mmd(real[picked == c].tolist(), fake[picked == c].tolist(), (2,
                                                                           60))
        for c in picked.unique())
    assert gen['loss_mmd'].item() == pytest.approx(want, rel=1e-4)


def test_released_mmd_estimator_and_summed_d_loss(embedding_table):
    """mmd_estimator='released': β · mean over classes of sqrt(½ · MMD²)
    (as released); adv_d_reduction='sum': D's loss is the real and
    fake log losses summed, not averaged, as released."""
    torch.manual_seed(0)
    head = build_head(
        embedding_table[0],
        mmd_max_pixels=1000,
        mmd_kernel_variances=(2, 60),
        loss_mmd_weight=3.0,
        mmd_estimator='released',
        adv_d_reduction='sum').eval()
    labels = torch.randint(0, 3, (2, 4, 6))
    feats = features()
    gen, real, fake, picked = head.loss_generator(feats, samples(labels))
    classes = picked.unique()
    want = 3.0 * sum(
        math.sqrt(0.5 * naive_mmd(real[picked == c].tolist(), fake[
            picked == c].tolist(), (2, 60))) for c in classes) / len(classes)
    assert gen['loss_mmd'].item() == pytest.approx(want, rel=1e-4)
    gen['loss_mmd'].backward()  # finite gradient through the root
    dis = head.loss_discriminator(real, fake)['loss_adv_d'].item()
    p_real = torch.sigmoid(head.discriminate(real)).tolist()
    p_fake = torch.sigmoid(head.discriminate(fake.detach())).tolist()
    want = (-sum(math.log(p) for p in p_real) / len(p_real) -
            sum(math.log(1 - p) for p in p_fake) / len(p_fake))
    assert dis == pytest.approx(want, rel=1e-5)
    with pytest.raises(ValueError, match='mmd_estimator'):
        build_head(embedding_table[0], mmd_estimator='sqrt')


def test_shared_trunk_layout(embedding_table):
    """C and D are two heads on one trunk (the authors' layout); with
    'linear', C is one 1×1 conv on F_x and D a separate MLP."""
    head = build_head(embedding_table[0], classifier='shared_trunk').eval()
    assert head.conv_seg.in_channels == 16 and \
        head.discriminator.in_channels == 16
    x = torch.rand(7, 8)
    trunk = torch.relu(x @ head.trunk[0].weight[:, :, 0, 0].T +
                       head.trunk[0].bias)
    torch.testing.assert_close(
        head.classify(x),
        trunk @ head.conv_seg.weight[:, :, 0, 0].T + head.conv_seg.bias)
    torch.testing.assert_close(
        head.discriminate(x), (trunk @ head.discriminator.weight[0, :, 0, 0] +
                               head.discriminator.bias))
    linear = build_head(embedding_table[0], classifier='linear')
    assert linear.conv_seg.in_channels == 8
    assert not list(linear.trunk.parameters())
    with pytest.raises(ValueError, match='classifier must be one of'):
        build_head(embedding_table[0], classifier='mlp')


def test_multi_scale_cross_entropy(embedding_table):
    """DeepLab-v2 multi-scale CE: mean of the CE of the scale-1 logits,
    each extra scale and their element-wise max (at scale-1 size)."""
    torch.manual_seed(0)
    head = build_head(
        embedding_table[0], dropout_ratio=0.0, classifier='linear').eval()
    labels = torch.randint(0, 3, (2, 8, 12))
    labels[:, 0] = 255
    feats = features(2, 4, 6)
    extra = [torch.randn(2, 5, 2, 3), torch.randn(2, 5, 3, 5)]
    got = head.loss_segmentation(feats, samples(labels), extra)['loss_ce']

    def ce(logits):
        up = F.interpolate(
            logits, (8, 12), mode='bilinear', align_corners=False)
        return F.cross_entropy(up, labels, ignore_index=255)

    main = head.forward(feats)
    fused = torch.stack([main] + [
        F.interpolate(x, (4, 6), mode='bilinear', align_corners=False)
        for x in extra
    ]).max(0).values
    want = (ce(main) + ce(extra[0]) + ce(extra[1]) + ce(fused)) / 4
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize('classifier', ['linear', 'shared_trunk'])
def test_pixel_classifier_equals_the_map_classifier(embedding_table,
                                                    classifier):
    """classify() on pixels (matrix products) is cls_seg() on a map."""
    head = build_head(embedding_table[0], classifier=classifier).eval()
    x = torch.rand(2, 8, 3, 4)
    pixels = x.permute(0, 2, 3, 1).reshape(-1, 8)
    want = head.cls_seg(x).permute(0, 2, 3, 1).reshape(-1, 5)
    torch.testing.assert_close(head.classify(pixels), want)


def test_weighted_segmentation_ce_keeps_the_loss_weight(embedding_table):
    """Self-training's per-pixel weights: with weight 1 on every labelled
    pixel the loss equals loss_decode's own (0.5·CE in the paper configs),
    multi-scale terms included, and acc_seg is unchanged."""
    head = build_head(
        embedding_table[0],
        loss_decode=dict(
            type='CrossEntropyLoss',
            loss_weight=0.5,
            avg_non_ignore=True,
            loss_name='loss_ce')).eval()
    labels = torch.randint(0, 3, (2, 8, 12))
    labels[:, :2] = 255
    feats = features()
    extra = [torch.randn(2, 5, 2, 3)]
    plain = head.loss_segmentation(feats, samples(labels), extra)
    ones = (labels != 255).float()
    weighted = head.loss_segmentation(
        feats, samples(labels), extra, weights=ones)
    for key in ('loss_ce', 'acc_seg', 'loss_kld'):
        torch.testing.assert_close(weighted[key], plain[key])


def test_posterior_latent_feeds_g_each_pixels_own_z(embedding_table):
    """Transfer with ``latent='posterior'``: the synthetic feature drawn
    for feature pixel (b, y, x) is G(M(ŷ), z[b, :, y, x]) (written here
    pixel by pixel), the same labels ŷ as with the prior; the prior's
    N(0, I) noise gives another loss; a latent of the wrong size is
    refused."""
    torch.manual_seed(0)
    head = build_head(embedding_table[0]).eval()  # no dropout: exact
    feats = features(b=2, h=3, w=5)
    labels = torch.randint(0, 3, (2, 3, 5))
    torch.manual_seed(7)
    got = head.loss_transfer(
        feats, samples(labels), 1.0, 2.0, latent='posterior')
    torch.manual_seed(7)
    pseudo = head.sample_pseudo_labels(2 * 3 * 5, 'cpu')
    z = feats[3].detach()
    rows = [
        z[b, :, y, x] for b in range(2) for y in range(3) for x in range(5)
    ]
    fake = torch.cat([
        head.generate(pseudo[i:i + 1], rows[i][None])
        for i in range(len(rows))
    ])
    want = 2.0 * F.cross_entropy(head.classify(fake), pseudo)
    torch.testing.assert_close(got['loss_ce_synth'], want)
    torch.manual_seed(7)
    prior = head.loss_transfer(feats, samples(labels), 1.0, 2.0)
    torch.testing.assert_close(prior['loss_ce'], got['loss_ce'])
    assert abs(prior['loss_ce_synth'].item() - want.item()) > 1e-4
    with pytest.raises(ValueError, match=r'latent must be \[30, 4\]'):
        head.loss_synthetic(30, feats[0], 1.0, z[:, :, :2].reshape(-1, 4))
