"""G and D as registered modules of their own, checked against
``tests/data/sign_head_golden.pth``: weights, SIM outputs, logits, losses and
gradients recorded by the head code from before the split
(``tests/data/make_sign_head_golden.py``)."""
import importlib.util
import os.path as osp

import pytest
import torch
import torch.nn as nn
from mmseg.registry import MODELS

DATA = osp.join(osp.dirname(osp.dirname(osp.abspath(__file__))), 'data')
spec = importlib.util.spec_from_file_location(
    'make_sign_head_golden', osp.join(DATA, 'make_sign_head_golden.py'))
golden_lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(golden_lib)


@pytest.fixture(autouse=True)
def one_thread():
    """The record was made with one thread (tests/data/
    make_sign_head_golden.py); float sums are only bit-equal with the same
    thread count, and the suite runs with the machine's default."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='module')
def golden():
    return torch.load(
        osp.join(DATA, 'sign_head_golden.pth'), weights_only=True)


@pytest.fixture()
def table(golden, tmp_path):
    """The recorded class-embedding table, as a file."""
    path = str(tmp_path / 'toy_table.npz')
    golden_lib.write_toy_table(path, golden['table'].numpy())
    return path


def assert_same_numbers(got, want):
    """Integer tensors (sampled labels, pixel indices) bit for bit; float
    ones (losses, generated features, gradients) to float32 rounding: their
    last bits depend on the CPU's matmul kernels and vector width (AVX2 and
    AVX-512 sum in other orders; G's output and the MMD differed in the
    last bit on an Intel Xeon, with the recording
    commit's code too)."""
    assert set(got) == set(want)
    for key, value in want.items():
        if torch.is_tensor(value) and value.is_floating_point():
            torch.testing.assert_close(got[key], value, msg=key)
        else:
            assert torch.equal(got[key], value), f'{key} differs'


def toy_model(golden, table, missing_table=False):
    """Today's toy segmentor (another seed), with the recorded checkpoint's
    head loaded; ``missing_table``: built without the table file, as
    ``init_model`` on another machine (the table comes from the weights)."""
    cfg = golden_lib.toy_cfg(table + '.missing' if missing_table else table)
    model = golden_lib.build(cfg.model, 123)
    missing, unexpected = model.load_state_dict(
        golden['toy']['state'], strict=False)
    assert unexpected == []
    assert not [k for k in missing if k.startswith('decode_head.')]
    return model, cfg


@pytest.mark.parametrize('missing_table', [False, True])
def test_toy_checkpoint_from_before_the_split(golden, table, missing_table):
    """The toy model's head weights saved before the split load under the
    same names and give the same logits, losses and gradients, bit for
    bit."""
    model, _ = toy_model(golden, table, missing_table)
    rec = golden['toy']
    logits, losses = golden_lib.run_head(model.decode_head, rec)
    assert torch.equal(logits, rec['logits'])
    assert_same_numbers(losses, rec['losses'])


def test_linear_layout_checkpoint_from_before_the_split(golden, table):
    head = golden_lib.build(golden_lib.linear_head_cfg(table), 123)
    head.load_state_dict(golden['linear']['state'], strict=True)
    logits, losses = golden_lib.run_head(head, golden['linear'])
    assert torch.equal(logits, golden['linear']['logits'])
    assert_same_numbers(losses, golden['linear']['losses'])


def test_seeded_build_and_optimizer_groups_unchanged(golden, table):
    """The same seed builds the same initial weights as before the split
    (the order of G, C, D's random initialisation is kept), and the toy
    config's optimizer wrappers select the same head parameters by name."""
    cfg = golden_lib.toy_cfg(table)
    head = golden_lib.build(cfg.model.decode_head, golden_lib.SEED)
    assert {k: golden_lib.digest(v)
            for k, v in head.state_dict().items()
            } == golden['toy']['init_state']
    head = golden_lib.build(golden_lib.linear_head_cfg(table), golden_lib.SEED)
    assert {k: golden_lib.digest(v)
            for k, v in head.state_dict().items()
            } == golden['linear']['init_state']
    model, cfg = toy_model(golden, table)
    assert golden_lib.optim_groups(model, cfg) == \
        golden['toy']['optim_groups']


@MODELS.register_module(name='TestEmbeddingOnlyGenerator', force=True)
class EmbeddingOnlyGenerator(nn.Module):
    """A real alternative G for the swap tests: ``sigmoid(W·M(y))``, no
    latent code and no ``set_embed_channels``."""

    def __init__(self, embed_channels, latent_channels, out_channels):
        super().__init__()
        self.proj = nn.Linear(embed_channels, out_channels)

    def forward(self, embeddings, z):
        return torch.sigmoid(self.proj(embeddings))


def small_head(path, **kwargs):
    cfg = dict(
        type='SIGNHead',
        in_channels=8,
        channels=8,
        num_classes=5,
        class_embeddings=path,
        latent_channels=4,
        trunk_channels=16,
        unseen_classes=['c3', 'c4'],
        mmd_max_pixels=10)
    cfg.update(kwargs)
    return MODELS.build(cfg)


def test_generator_swapped_from_the_config(embedding_table):
    """decode_head.generator=dict(type=...) builds another registered G
    (its widths filled in; the PixelMLPGenerator-only head arguments left
    out), and every loss runs through it."""
    from mmseg_sign.models.generators import PixelMLPGenerator
    head = small_head(
        embedding_table[0],
        generator_hidden=(16, ),
        generator=dict(type='TestEmbeddingOnlyGenerator'))
    assert isinstance(head.generator, EmbeddingOnlyGenerator)
    assert not isinstance(head.generator, PixelMLPGenerator)
    assert head.generator.proj.in_features == 12  # the table's width
    assert head.generator.proj.out_features == 8  # the SIM channels
    assert {k for k in head.state_dict() if k.startswith('generator.')} \
        == {'generator.proj.weight', 'generator.proj.bias'}
    labels = torch.tensor([0, 2, 2])
    z1, z2 = torch.randn(3, 4), torch.randn(3, 4)
    want = torch.sigmoid(
        head.class_embedding[labels] @ head.generator.proj.weight.T +
        head.generator.proj.bias)
    torch.testing.assert_close(head.generate(labels, z1), want)
    assert torch.equal(head.generate(labels, z1), head.generate(labels, z2))
    label_maps = torch.randint(0, 3, (2, 8, 12))
    feats = (torch.rand(2, 8, 4, 6), *torch.randn(3, 2, 4, 4, 6))
    losses, real, fake, _ = head.loss_generator(feats,
                                                golden_lib.samples(label_maps))
    (losses['loss_mmd'] + losses['loss_adv_g']).backward()
    assert head.generator.proj.weight.grad.abs().sum() > 0
    assert torch.isfinite(head.loss_synthetic(10, feats[0]))


def test_legacy_arguments_are_the_default_configs(embedding_table):
    """The head arguments of before the split build what the equivalent
    generator / discriminator configs build (same seed: same weights);
    a config's own value wins over the legacy argument."""
    path = embedding_table[0]
    legacy = dict(
        generator_hidden=(16, ),
        generator_dropout=0.2,
        generator_out_act=None,
        discriminator_hidden=(6, ),
        classifier='linear')
    explicit = dict(
        classifier='linear',
        generator=dict(
            type='PixelMLPGenerator',
            hidden_channels=(16, ),
            dropout=0.2,
            out_act=None),
        discriminator=dict(
            type='PixelMLPDiscriminator', hidden_channels=(6, )))
    torch.manual_seed(0)
    a = small_head(path, **legacy)
    torch.manual_seed(0)
    b = small_head(path, **explicit)
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert [type(m) for m in a.generator] == [type(m) for m in b.generator]
    assert not any(isinstance(m, nn.Sigmoid) for m in a.generator)
    assert a.discriminator[0].out_features == 6
    c = small_head(
        path,
        generator_hidden=(16, ),
        generator_dropout=0.1,
        generator=dict(type='PixelMLPGenerator', hidden_channels=(5, )))
    assert c.generator[0].out_features == 5


def test_discriminator_swapped_in_the_shared_trunk_layout(embedding_table):
    """An MLP D on the shared trunk: it reads the trunk's pixels (its
    in_channels is trunk_channels) and D's loss trains through it."""
    head = small_head(
        embedding_table[0],
        classifier='shared_trunk',
        discriminator=dict(
            type='PixelMLPDiscriminator', hidden_channels=(4, ))).eval()
    assert head.discriminator.in_channels == 16
    x = torch.rand(7, 8)
    trunk = torch.relu(x @ head.trunk[0].weight[:, :, 0, 0].T +
                       head.trunk[0].bias)
    first, last = head.discriminator[0], head.discriminator[2]
    want = (nn.functional.leaky_relu(first(trunk), 0.2) @ last.weight.T +
            last.bias)[:, 0]
    torch.testing.assert_close(head.discriminate(x), want)
    fake = torch.rand(5, 8, requires_grad=True)
    loss = head.loss_discriminator(x, fake)['loss_adv_d']
    loss.backward()
    assert first.weight.grad is not None and first.weight.grad.abs().sum() > 0


def test_checkpoint_table_width_needs_a_resizable_generator(
        embedding_table, tmp_path):
    """A placeholder table (missing file) takes a checkpoint's table of
    another width: the default G rebuilds its input layer; a G that
    cannot is a clear error."""
    missing = str(tmp_path / 'nowhere.npz')
    trained = small_head(embedding_table[0])
    state = trained.state_dict()
    head = small_head(missing, embed_dim=600, unseen_classes=None)
    assert head.generator[0].in_features == 604
    head.load_state_dict(state)
    assert head.generator[0].in_features == 16  # 12-d table + z (4)
    assert torch.equal(head.generator[0].weight, trained.generator[0].weight)
    other = small_head(
        missing,
        embed_dim=600,
        unseen_classes=None,
        generator=dict(type='TestEmbeddingOnlyGenerator'))
    with pytest.raises(ValueError, match='set_embed_channels'):
        other.load_state_dict(
            small_head(
                embedding_table[0],
                generator=dict(
                    type='TestEmbeddingOnlyGenerator')).state_dict())
