# Copyright (c) OpenMMLab. All rights reserved.
"""CLIP class embeddings: tiny random CLIP text models (and a byte-level
BPE tokenizer from a hand-written vocab) saved on the fly, nothing
downloaded; the builder is checked against a naive prompt-by-prompt
computation with the Hugging Face model itself."""
import json
import os
import os.path as osp
import shutil
import sys

import numpy as np
import pytest
import torch
from e2e_utils import load_tool, run_tool, short_plan, write_config
from gensim.models import KeyedVectors
from transformers import (CLIPConfig, CLIPModel, CLIPTextConfig, CLIPTextModel,
                          CLIPTextModelWithProjection, CLIPTokenizer)

from mmseg_sign.datasets.class_names import TOY_CLASSES
from mmseg_sign.embeddings import (DEFAULT_CLIP_TEMPLATES, CLIPTextEncoder,
                                   build_class_embeddings,
                                   clip_text_embeddings, load_class_embeddings,
                                   read_class_embeddings)

REPO_ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
HIDDEN = 32
# class names as datasets write them -> the text the prompts get
CLASSES = ('cat', 'pottedplant', 'dining_table', 'wall-concrete', 'sky-other')
TEXTS = ('cat', 'potted plant', 'dining table', 'wall concrete', 'sky')
TEMPLATES = ('a photo of a {}.', 'there is the {} in the scene.', '{}')
WORDS = {  # a tiny word2vec source (3-d) for the concatenation
    'cat': [1.0, 0.0, 0.0],
    'potted': [0.0, 2.0, 0.0],
    'plant': [0.0, 0.0, 2.0],
    'dining': [1.0, 1.0, 0.0],
    'table': [0.0, 1.0, 1.0],
    'wall': [3.0, 0.0, 4.0],
    'concrete': [1.0, 2.0, 2.0],
    'sky': [0.0, 0.0, 5.0],
}


def _byte_symbols():
    """The 256 printable stand-ins of byte-level BPE (GPT-2 / CLIP)."""
    keep = (
        list(range(ord('!'),
                   ord('~') + 1)) + list(range(ord('¡'),
                                               ord('¬') + 1)) +
        list(range(ord('®'),
                   ord('ÿ') + 1)))
    extra = [256 + i for i in range(256 - len(keep))]
    return [chr(c) for c in keep + extra]


def save_tiny_tokenizer(path):
    """A CLIP BPE tokenizer: every byte (alone and word-final ``</w>``), a
    few merges and the two special tokens last (ids as in CLIP, where
    ``<|endoftext|>`` has the highest id)."""
    chars = _byte_symbols()
    merges = [('t', 'h'), ('th', 'e</w>'), ('o', 'f</w>'), ('i', 'n</w>'),
              ('a', 't</w>')]
    tokens = chars + [c + '</w>' for c in chars] + \
        [a + b for a, b in merges] + ['<|startoftext|>', '<|endoftext|>']
    with open(osp.join(path, 'vocab.json'), 'w', encoding='utf-8') as f:
        json.dump({tok: i for i, tok in enumerate(tokens)}, f)
    with open(osp.join(path, 'merges.txt'), 'w', encoding='utf-8') as f:
        f.write('#version: 0.2\n' + ''.join(f'{a} {b}\n' for a, b in merges))
    tokenizer = CLIPTokenizer.from_pretrained(path)
    tokenizer.save_pretrained(path)
    return tokenizer


def make_tiny_clip(path, projection_dim=16, kind='projection', seed=0):
    """Save a random tiny CLIP to ``path``: ``kind`` is ``'projection'``
    (CLIPTextModelWithProjection), ``'text'`` (CLIPTextModel, no
    projection) or ``'full'`` (CLIPModel with a tiny vision tower)."""
    path = str(path)
    os.makedirs(path, exist_ok=True)
    tokenizer = save_tiny_tokenizer(path)
    text = dict(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=64,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    if kind == 'full':
        config = CLIPConfig(
            text_config=text,
            vision_config=dict(
                hidden_size=HIDDEN,
                intermediate_size=HIDDEN,
                num_hidden_layers=1,
                num_attention_heads=2,
                image_size=32,
                patch_size=16),
            projection_dim=projection_dim)
        model = CLIPModel(config)
    elif kind == 'text':
        model = CLIPTextModel(CLIPTextConfig(**text))
    else:
        model = CLIPTextModelWithProjection(
            CLIPTextConfig(projection_dim=projection_dim, **text))
    model.save_pretrained(path)
    return path


def unit(vec):
    vec = np.asarray(vec, np.float64)
    return vec / np.linalg.norm(vec)


def naive_table(path, texts, templates, kind='projection'):
    """One prompt at a time through the Hugging Face model (no padding):
    normalise, average over templates, normalise."""
    tokenizer = CLIPTokenizer.from_pretrained(path)
    cls = dict(
        projection=CLIPTextModelWithProjection,
        text=CLIPTextModel,
        full=CLIPModel)[kind]
    model = cls.from_pretrained(path).eval()
    rows = []
    for text in texts:
        embs = []
        for template in templates:
            inputs = tokenizer(template.format(text), return_tensors='pt')
            with torch.no_grad():
                if kind == 'projection':
                    emb = model(**inputs).text_embeds
                elif kind == 'text':
                    emb = model(**inputs).pooler_output
                else:  # a tensor (transformers 4) or an output (5)
                    emb = model.get_text_features(**inputs)
                    emb = getattr(emb, 'pooler_output', emb)
            embs.append(unit(emb[0].numpy()))
        rows.append(unit(np.mean(embs, axis=0)))
    return np.array(rows)


@pytest.fixture(scope='module')
def tiny_clip(tmp_path_factory):
    return make_tiny_clip(tmp_path_factory.mktemp('clip'), 16)


@pytest.fixture(scope='module')
def w2v_file(tmp_path_factory):
    vectors = KeyedVectors(vector_size=3)
    vectors.add_vectors(list(WORDS), np.array(list(WORDS.values())))
    path = str(tmp_path_factory.mktemp('w2v') / 'tiny.txt')
    vectors.save_word2vec_format(path)
    return path


def test_table_matches_naive_computation(tiny_clip):
    source = dict(path=tiny_clip, format='clip', templates=TEMPLATES)
    table = build_class_embeddings(CLASSES, [source])
    # (a) K x projection_dim, float32, unit rows
    assert table.shape == (len(CLASSES), 16) and table.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1, rtol=1e-6)
    # (b) the numbers, prompt by prompt with the model itself; names are
    # turned into words like for word vectors ('pottedplant' -> 'potted
    # plant' by the default synonyms, '-other' stripped, '_' / '-' split)
    expected = naive_table(tiny_clip, TEXTS, TEMPLATES)
    np.testing.assert_allclose(table, expected, rtol=1e-5, atol=1e-6)

    encoder = CLIPTextEncoder(tiny_clip)
    assert encoder.has_projection and encoder.embed_dim == 16
    assert not encoder.model.training
    # batches of 2 (padded prompts of different lengths) = one batch
    small = clip_text_embeddings(TEXTS, encoder, TEMPLATES, batch_size=2)
    np.testing.assert_allclose(small, expected, rtol=1e-5, atol=1e-6)
    # the default templates
    default = build_class_embeddings(['cat'], [encoder])
    np.testing.assert_allclose(
        default[0],
        naive_table(tiny_clip, ['cat'], DEFAULT_CLIP_TEMPLATES)[0],
        rtol=1e-5,
        atol=1e-6)
    assert 5 <= len(DEFAULT_CLIP_TEMPLATES) <= 8


def test_multi_word_names(tiny_clip):
    encoder = CLIPTextEncoder(tiny_clip)
    got = clip_text_embeddings(
        ['dining_table', 'potted-plant', 'dining  table'], encoder, TEMPLATES)
    whole = naive_table(tiny_clip, ['dining table', 'potted plant'], TEMPLATES)
    # underscores / dashes / runs of spaces -> one space: the whole phrase
    # goes into the prompt
    np.testing.assert_allclose(got[:2], whole, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], got[0], rtol=1e-6)
    parts = naive_table(tiny_clip, ['dining', 'table'], TEMPLATES)
    for part in parts:  # not just one of the words
        assert np.abs(got[0] - part).max() > 1e-2
    # through the builder: synonyms apply to CLIP too
    table = build_class_embeddings(['dining_table', 'tvmonitor', 'thing'],
                                   [encoder],
                                   synonyms={'thing': 'potted plant'})
    np.testing.assert_allclose(
        table,
        naive_table(tiny_clip, ['dining table', 'tv monitor', 'potted plant'],
                    DEFAULT_CLIP_TEMPLATES),
        rtol=1e-5,
        atol=1e-6)


def test_concatenation_with_word_vectors(tiny_clip, w2v_file):
    clip = dict(path=tiny_clip, format='clip', templates=TEMPLATES)
    w2v = dict(path=w2v_file, format='word2vec', show_progress=False)
    clip_only = build_class_embeddings(CLASSES, [clip])
    w2v_only = build_class_embeddings(CLASSES, [w2v])
    table = build_class_embeddings(CLASSES, [clip, w2v])
    assert table.shape == (len(CLASSES), 16 + 3)
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1, rtol=1e-6)
    # each part is unit-norm before the whole row is: parts scale by 1/√2
    np.testing.assert_allclose(
        table[:, :16] * np.sqrt(2), clip_only, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        table[:, 16:] * np.sqrt(2), w2v_only, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        w2v_only[CLASSES.index('dining_table')],
        unit(np.add(WORDS['dining'], WORDS['table'])),
        rtol=1e-6)
    # the given order; without the final normalisation the parts as built
    swapped = build_class_embeddings(CLASSES, [w2v, clip], normalize=False)
    np.testing.assert_allclose(swapped[:, :3], w2v_only, rtol=1e-6)
    np.testing.assert_allclose(swapped[:, 3:], clip_only, rtol=1e-6)


def test_checkpoint_kinds(tmp_path):
    """A full CLIPModel (its own projection width) and a CLIPTextModel
    without projection (the pooled output) load as well."""
    full = make_tiny_clip(tmp_path / 'full', projection_dim=24, kind='full')
    encoder = CLIPTextEncoder(full)
    assert encoder.has_projection and encoder.embed_dim == 24
    np.testing.assert_allclose(
        clip_text_embeddings(TEXTS[:2], encoder, TEMPLATES),
        naive_table(full, TEXTS[:2], TEMPLATES, 'full'),
        rtol=1e-5,
        atol=1e-6)

    text = make_tiny_clip(tmp_path / 'text', kind='text')
    encoder = CLIPTextEncoder(text)
    assert not encoder.has_projection and encoder.embed_dim == HIDDEN
    np.testing.assert_allclose(
        clip_text_embeddings(TEXTS[:2], encoder, TEMPLATES),
        naive_table(text, TEXTS[:2], TEMPLATES, 'text'),
        rtol=1e-5,
        atol=1e-6)


def test_cli_end_to_end(tiny_clip, w2v_file, tmp_path, capsys):
    tool = load_tool('build_class_embeddings')
    assert tool.parse_source('clip:/ckpt/clip-b32') == dict(
        path='/ckpt/clip-b32', format='clip')
    assert tool.parse_source('/ckpt/clip-b32:clip') == dict(
        path='/ckpt/clip-b32', format='clip')
    assert tool.parse_source('x/a.bin:word2vec_binary') == dict(
        path='x/a.bin', format='word2vec_binary')

    classes = tmp_path / 'classes.txt'
    classes.write_text('\n'.join(CLASSES) + '\n')
    templates = tmp_path / 'templates.txt'
    templates.write_text('# prompts\n' + '\n'.join(TEMPLATES) + '\n\n')
    out = str(tmp_path / 'clip_w2v.npz')
    tool.main([
        '--classes',
        str(classes), '--source', f'clip:{tiny_clip}', '--source',
        f'{w2v_file}:word2vec', '--clip-templates',
        str(templates), '--out', out
    ])
    assert f'{len(CLASSES)} classes x 19 dims' in capsys.readouterr().out
    # the project's validated reader (the one SIGNHead uses) accepts it
    names, table = read_class_embeddings(out)
    assert names == list(CLASSES)
    expected = build_class_embeddings(CLASSES, [
        dict(path=tiny_clip, format='clip', templates=TEMPLATES),
        dict(path=w2v_file, format='word2vec', show_progress=False)
    ])
    np.testing.assert_allclose(table, expected, rtol=1e-6)
    np.testing.assert_allclose(load_class_embeddings(out, CLASSES), table)

    # CLIP alone, a built-in class list, the default templates
    toy = str(tmp_path / 'toy_clip.npz')
    tool.main(
        ['--dataset', 'toy', '--source', f'clip:{tiny_clip}', '--out', toy])
    toy_table = load_class_embeddings(toy, TOY_CLASSES)
    assert toy_table.shape == (len(TOY_CLASSES), 16)
    np.testing.assert_allclose(
        toy_table[:2],
        naive_table(tiny_clip, TOY_CLASSES[:2], DEFAULT_CLIP_TEMPLATES),
        rtol=1e-5,
        atol=1e-6)

    bad = tmp_path / 'bad_templates.txt'
    bad.write_text('a photo of a thing.\n')
    with pytest.raises(SystemExit, match="exactly one '{}'"):
        tool.main([
            '--classes',
            str(classes), '--source', f'clip:{tiny_clip}', '--clip-templates',
            str(bad), '--out',
            str(tmp_path / 'x.npz')
        ])
    with pytest.raises(SystemExit, match='needs a clip:DIR source'):
        tool.main([
            '--classes',
            str(classes), '--source', w2v_file, '--clip-templates',
            str(templates), '--out',
            str(tmp_path / 'x.npz')
        ])
    assert not osp.exists(tmp_path / 'x.npz')


def test_clear_errors(tiny_clip, tmp_path, monkeypatch):
    # missing path, and a Hub id: never downloaded
    with pytest.raises(
            FileNotFoundError, match='absent_clip.*save_pretrained'):
        CLIPTextEncoder(str(tmp_path / 'absent_clip'))
    with pytest.raises(FileNotFoundError, match='nothing is downloaded'):
        CLIPTextEncoder('openai/clip-vit-base-patch32')
    # a file; a directory that is not a CLIP checkpoint
    (tmp_path / 'file.bin').write_bytes(b'x')
    with pytest.raises(ValueError, match='is a file, not a directory'):
        CLIPTextEncoder(str(tmp_path / 'file.bin'))
    empty = tmp_path / 'empty'
    empty.mkdir()
    with pytest.raises(ValueError, match='no config.json.*save_pretrained'):
        CLIPTextEncoder(str(empty))
    bert = tmp_path / 'bert'
    bert.mkdir()
    (bert / 'config.json').write_text(json.dumps({'model_type': 'bert'}))
    with pytest.raises(ValueError, match="model_type 'bert'"):
        CLIPTextEncoder(str(bert))
    # a CLIP config without weights / without the tokenizer
    no_weights = tmp_path / 'no_weights'
    no_weights.mkdir()
    shutil.copy(osp.join(tiny_clip, 'config.json'), no_weights)
    with pytest.raises(ValueError, match='no model weights'):
        CLIPTextEncoder(str(no_weights))
    no_tok = tmp_path / 'no_tokenizer'
    shutil.copytree(tiny_clip, no_tok)
    for name in ('tokenizer.json', 'vocab.json', 'merges.txt'):
        if (no_tok / name).exists():
            (no_tok / name).unlink()
    with pytest.raises(ValueError, match='no tokenizer files'):
        CLIPTextEncoder(str(no_tok))
    # damaged weights
    broken = tmp_path / 'broken'
    shutil.copytree(tiny_clip, broken)
    (broken / 'model.safetensors').write_bytes(b'not safetensors')
    with pytest.raises(ValueError, match='Cannot load the CLIP checkpoint'):
        CLIPTextEncoder(str(broken))
    # config and tokenizer disagree on the end-of-text token (pooling)
    wrong_eos = tmp_path / 'wrong_eos'
    shutil.copytree(tiny_clip, wrong_eos)
    config = json.loads((wrong_eos / 'config.json').read_text())
    config['eos_token_id'] = 5
    (wrong_eos / 'config.json').write_text(json.dumps(config))
    with pytest.raises(ValueError, match='eos_token_id=5'):
        CLIPTextEncoder(str(wrong_eos))
    # the tool: one line naming the path, no traceback
    tool = load_tool('build_class_embeddings')
    with pytest.raises(SystemExit, match=r'error: .*empty.*config\.json'):
        tool.main([
            '--dataset', 'toy', '--source', f'clip:{empty}', '--out',
            str(tmp_path / 'x.npz')
        ])
    # templates
    with pytest.raises(ValueError, match="exactly one '{}'"):
        build_class_embeddings(
            ['cat'],
            [dict(path=tiny_clip, format='clip', templates=['{} and {}'])])
    with pytest.raises(ValueError, match="exactly one '{}'"):
        clip_text_embeddings(['cat'], tiny_clip, ['a {0} {}'])
    with pytest.raises(TypeError, match='unknown CLIP source options'):
        build_class_embeddings(
            ['cat'], [dict(path=tiny_clip, format='clip', template='{}')])
    # transformers missing: the install hint
    monkeypatch.setitem(sys.modules, 'transformers', None)
    with pytest.raises(ImportError, match=r"mmseg-sign\[clip\]"):
        CLIPTextEncoder(tiny_clip)
    with pytest.raises(SystemExit, match='pip install transformers'):
        tool.main([
            '--dataset', 'toy', '--source', f'clip:{tiny_clip}', '--out',
            str(tmp_path / 'x.npz')
        ])


SHORT_RUN = short_plan(
    2, 2, 1, self_train_mode="mode='AST', "
    'temperature=0.1') + """
train_dataloader = dict(batch_size=2)
default_hooks = dict(checkpoint=dict(interval=5), logger=dict(interval=1),
                     visualization=dict(interval=1000))
"""


@pytest.mark.slow
def test_toy_clip_config(toy_root, tmp_path):
    """configs/sign/sign_toy_clip.py with a 512-d table from a tiny CLIP
    (projection_dim 512): tools/train.py runs every stage, shrunk."""
    from mmengine.config import Config
    shipped = osp.join(REPO_ROOT, 'configs', 'sign', 'sign_toy_clip.py')
    cfg = Config.fromfile(shipped)
    head = cfg.model.decode_head
    assert head.class_embeddings == 'data/toy/class_embeddings_clip.npz'
    assert head.embed_dim == 512

    ckpt = make_tiny_clip(tmp_path / 'clip512', projection_dim=512)
    shutil.copytree(toy_root, tmp_path / 'data' / 'toy')
    out = tmp_path / head.class_embeddings
    load_tool('build_class_embeddings').main(
        ['--dataset', 'toy', '--source', f'clip:{ckpt}', '--out',
         str(out)])
    assert load_class_embeddings(str(out), TOY_CLASSES).shape == (10, 512)

    short = write_config(tmp_path / 'clip_short.py',
                         'configs/sign/sign_toy_clip.py', SHORT_RUN)
    wd = tmp_path / 'wd'
    log = run_tool(['train.py', short, '--work-dir', str(wd)], tmp_path)
    assert "SIGN stage 'self_train' (3/3)" in log and 'hIoU' in log
    state = torch.load(str(wd / 'iter_5.pth'), map_location='cpu')
    table = state['state_dict']['decode_head.class_embedding']
    assert tuple(table.shape) == (10, 512)
    np.testing.assert_allclose(
        table.numpy(), load_class_embeddings(str(out)), rtol=1e-6)
