# Copyright (c) OpenMMLab. All rights reserved.
"""Class embeddings: real gensim files, numbers checked by hand."""
import ast
import importlib.util
import json
import os
import os.path as osp
import re

import numpy as np
import pytest
from e2e_utils import load_tool
from gensim.models import FastText, KeyedVectors
from gensim.models.fasttext import save_facebook_model

from mmseg_sign.datasets.class_names import (COCOSTUFF171_CLASSES,
                                             CONTEXT33_CLASSES, VOC20_CLASSES)
from mmseg_sign.embeddings import (DEFAULT_SYNONYMS, MissingWordError,
                                   ReadProgress, build_class_embeddings,
                                   class_name_to_words, guess_format,
                                   load_class_embeddings, load_word_vectors,
                                   save_class_embeddings)

REPO_ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

# Source A (4-d) and source B (3-d), hand-chosen.
WORDS_A = {
    'potted': [3.0, 0.0, 4.0, 0.0],
    'plant': [1.0, 2.0, 0.0, 2.0],
    'cat': [0.0, 0.0, 0.0, 2.0],
    'wall': [2.0, 0.0, 0.0, 0.0],
    'concrete': [0.0, 0.0, 2.0, 0.0],
    'sky': [0.0, 1.0, 1.0, 0.0],
    'filler': [9.0, 9.0, 9.0, 9.0],
}
WORDS_B = {
    'potted': [1.0, 0.0, 0.0],
    'plant': [0.0, 1.0, 0.0],
    'cat': [0.0, 3.0, 4.0],
    'wall': [0.0, 0.0, 1.0],
    'concrete': [1.0, 1.0, 1.0],
    'sky': [2.0, 0.0, 0.0],
}
CLASSES = ('pottedplant', 'cat', 'wall-concrete', 'sky-other')


def make_kv(words):
    vectors = KeyedVectors(vector_size=len(next(iter(words.values()))))
    vectors.add_vectors(
        list(words), np.array(list(words.values()), np.float32))
    return vectors


def unit(vec):
    vec = np.asarray(vec, np.float64)
    return vec / np.linalg.norm(vec)


def expected_table(sources, normalize=True):
    """Independent computation with the hand-chosen word lists."""
    words = {
        'pottedplant': ['potted', 'plant'],
        'cat': ['cat'],
        'wall-concrete': ['wall', 'concrete'],
        'sky-other': ['sky'],
    }
    rows = []
    for name in CLASSES:
        parts = [
            unit(np.mean([src[w] for w in words[name]], axis=0))
            for src in sources
        ]
        row = np.concatenate(parts)
        rows.append(unit(row) if normalize else row)
    return np.array(rows)


@pytest.fixture(scope='module')
def word_files(tmp_path_factory):
    """Source A as word2vec text / binary / KeyedVectors / gzip / GloVe."""
    root = tmp_path_factory.mktemp('vectors')
    kv_a, kv_b = make_kv(WORDS_A), make_kv(WORDS_B)
    files = dict(
        text=str(root / 'a.txt'),
        binary=str(root / 'a.bin'),
        kv=str(root / 'a.kv'),
        gz=str(root / 'a.txt.gz'),
        glove=str(root / 'glove.txt'),
        b_binary=str(root / 'b.bin'))
    kv_a.save_word2vec_format(files['text'])
    kv_a.save_word2vec_format(files['binary'], binary=True)
    kv_a.save_word2vec_format(files['gz'])
    kv_a.save(files['kv'])
    kv_b.save_word2vec_format(files['b_binary'], binary=True)
    with open(files['glove'], 'w') as f:  # GloVe: no header line
        for word, vec in WORDS_A.items():
            f.write(word + ' ' + ' '.join(str(v) for v in vec) + '\n')
    return files


@pytest.fixture(scope='module')
def fasttext_file(tmp_path_factory):
    path = str(tmp_path_factory.mktemp('fasttext') / 'ft.bin')
    sentences = [['potted', 'plant', 'on', 'the', 'table'],
                 ['a', 'cat', 'near', 'the', 'wall'],
                 ['concrete', 'wall', 'under', 'the', 'sky']] * 5
    model = FastText(
        sentences=sentences,
        vector_size=6,
        min_count=1,
        window=2,
        epochs=2,
        bucket=64,
        workers=1,
        seed=0)
    save_facebook_model(model, path)
    return path, model


def test_class_name_to_words():
    assert class_name_to_words('pottedplant') == ['potted', 'plant']
    assert class_name_to_words('tvmonitor') == ['tv', 'monitor']
    assert class_name_to_words('diningtable') == ['dining', 'table']
    assert class_name_to_words('motorbike') == ['motorbike']
    assert class_name_to_words('playingfield') == ['playing', 'field']
    assert class_name_to_words('wall-concrete') == ['wall', 'concrete']
    assert class_name_to_words('traffic light') == ['traffic', 'light']
    assert class_name_to_words('fire_hydrant') == ['fire', 'hydrant']
    assert class_name_to_words('sky-other') == ['sky']
    assert class_name_to_words('desk-stuff') == ['desk']
    assert class_name_to_words('sky-other-merged') == ['sky']
    assert class_name_to_words('TVMonitor') == ['tv', 'monitor']
    # user synonyms override the defaults; values may be lists
    assert class_name_to_words('tvmonitor', {'tvmonitor': 'television'}) \
        == ['television']
    assert class_name_to_words(
        'sofa', {'sofa': ['couch', 'settee']}) == ['couch', 'settee']
    assert class_name_to_words(
        'pottedplant', use_default=False) == ['pottedplant']
    with pytest.raises(ValueError, match='sofa'):
        class_name_to_words('sofa', {'sofa': ' - '})


def _context59_classes():
    """The 59 Context names, read from mmseg's source without importing."""
    spec = importlib.util.find_spec('mmseg')
    if spec is None:
        pytest.skip('mmsegmentation is not installed')
    path = osp.join(osp.dirname(spec.origin), 'datasets', 'pascal_context.py')
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ClassDef)
                and node.name == 'PascalContextDataset59'):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and \
                    stmt.targets[0].id == 'METAINFO':
                for keyword in stmt.value.keywords:
                    if keyword.arg == 'classes':
                        return ast.literal_eval(keyword.value)
    raise AssertionError('PascalContextDataset59 not found')


def test_default_synonyms_cover_benchmarks():
    context59 = _context59_classes()
    assert len(context59) == 59
    names = set(VOC20_CLASSES + CONTEXT33_CLASSES + COCOSTUFF171_CLASSES +
                tuple(context59))
    compounds = {
        'pottedplant', 'tvmonitor', 'diningtable', 'playingfield',
        'waterdrops', 'bedclothes'
    }
    assert compounds <= set(DEFAULT_SYNONYMS)
    for name in names:
        words = class_name_to_words(name)
        for word in words:
            assert re.fullmatch('[a-z]+', word), (name, words)
            assert word not in compounds | {'other', 'stuff', 'merged'}, (
                name, words)
    assert class_name_to_words('bedclothes') == ['bed', 'clothes']
    assert class_name_to_words('building-other') == ['building']


def test_build_matches_hand_computation(word_files):
    kv_a, kv_b = make_kv(WORDS_A), make_kv(WORDS_B)
    table = build_class_embeddings(CLASSES, [kv_a, kv_b])
    assert table.dtype == np.float32 and table.shape == (4, 7)
    expected = expected_table([WORDS_A, WORDS_B])
    np.testing.assert_allclose(table, expected, rtol=1e-6, atol=1e-7)
    # one value by hand: pottedplant, source A = mean([3,0,4,0],[1,2,0,2])
    # = [2,1,2,1] / sqrt(10), halved in norm by the whole-row L2 norm.
    np.testing.assert_allclose(
        table[0, :4],
        np.array([2, 1, 2, 1]) / np.sqrt(10) / np.sqrt(2),
        rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1, rtol=1e-6)

    # without the final normalisation every source part is a unit vector
    raw = build_class_embeddings(CLASSES, [kv_a, kv_b], normalize=False)
    np.testing.assert_allclose(
        raw, expected_table([WORDS_A, WORDS_B], False), rtol=1e-6)
    np.testing.assert_allclose(
        np.linalg.norm(raw[:, :4], axis=1), 1, rtol=1e-6)
    np.testing.assert_allclose(
        np.linalg.norm(raw[:, 4:], axis=1), 1, rtol=1e-6)

    # concatenation follows the source order; sources can be files
    swapped = build_class_embeddings(
        CLASSES,
        [dict(path=word_files['b_binary'], format='auto'), word_files['text']],
        show_progress=False)
    np.testing.assert_allclose(swapped[:, :3], table[:, 4:], rtol=1e-6)
    np.testing.assert_allclose(swapped[:, 3:], table[:, :4], rtol=1e-6)

    # any number of sources
    three = build_class_embeddings(CLASSES, [kv_a, kv_b, kv_a])
    np.testing.assert_allclose(
        three, expected_table([WORDS_A, WORDS_B, WORDS_A]), rtol=1e-6)


def test_word_vector_formats(word_files):
    reference = make_kv(WORDS_A)
    cases = [('text', 'word2vec'), ('binary', 'word2vec_binary'),
             ('kv', 'keyedvectors'), ('gz', 'word2vec'), ('glove', 'word2vec')]
    for key, fmt in cases:
        path = word_files[key]
        assert guess_format(path) == fmt
        for given in (fmt, 'auto'):
            vectors = load_word_vectors(path, given, show_progress=False)
            assert vectors.vector_size == 4
            assert set(vectors.key_to_index) == set(WORDS_A), key
            for word in WORDS_A:
                np.testing.assert_allclose(vectors[word], reference[word])
    with pytest.raises(ValueError, match='extension'):
        guess_format(word_files['text'] + '.unknown')
    with pytest.raises(ValueError, match='Unknown word-vector format'):
        load_word_vectors(word_files['text'], 'glove2')
    missing = osp.join(osp.dirname(word_files['text']), 'nope.bin')
    with pytest.raises(FileNotFoundError, match=re.escape(missing)):
        load_word_vectors(missing)
    with pytest.raises(FileNotFoundError, match='nope.bin'):
        build_class_embeddings(CLASSES, [dict(path=missing)])


def test_fasttext_bin(fasttext_file):
    path, model = fasttext_file
    assert guess_format(path) == 'fasttext'
    vectors = load_word_vectors(path, 'fasttext', show_progress=False)
    np.testing.assert_allclose(vectors['cat'], model.wv['cat'], rtol=1e-6)
    names = ('pottedplant', 'cat', 'wall-concrete')
    table = build_class_embeddings(
        names, [dict(path=path, format='fasttext', show_progress=False)])
    wv = model.wv
    expected = [
        unit((wv['potted'] + wv['plant']) / 2),
        unit(wv['cat']),
        unit((wv['wall'] + wv['concrete']) / 2)
    ]
    np.testing.assert_allclose(table, expected, rtol=1e-5, atol=1e-6)
    # unknown words fail unless subword vectors are asked for
    with pytest.raises(MissingWordError, match='zebra'):
        build_class_embeddings(['zebra'], [vectors])
    oov = build_class_embeddings(['zebra'], [vectors], fasttext_oov=True)
    np.testing.assert_allclose(oov[0], unit(wv['zebra']), rtol=1e-5)


def test_lowercase_fallback_and_missing_words(word_files):
    kv_a = make_kv(WORDS_A)
    table = build_class_embeddings(['Sky', 'CAT'], [kv_a])
    np.testing.assert_allclose(
        table,
        [unit(WORDS_A['sky']), unit(WORDS_A['cat'])], rtol=1e-6)
    with pytest.raises(KeyError) as info:
        build_class_embeddings(['cat', 'tvmonitor'], [kv_a])
    message = str(info.value)
    for part in ("'tvmonitor'", 'index 1', "'tv'", "'monitor'", 'synonym'):
        assert part in message, message
    # the message names a file source by its path
    with pytest.raises(MissingWordError) as info:
        build_class_embeddings(['dog'], [word_files['binary']],
                               show_progress=False)
    assert word_files['binary'] in str(info.value)
    assert "'dog'" in str(info.value)
    # a synonym fixes it
    fixed = build_class_embeddings(['dog'], [kv_a], synonyms={'dog': 'cat'})
    np.testing.assert_allclose(fixed[0], unit(WORDS_A['cat']), rtol=1e-6)
    with pytest.raises(ValueError, match='twice'):
        build_class_embeddings(['cat', 'cat'], [kv_a])


def test_read_progress(word_files, capsys):
    path = word_files['text']
    progress = ReadProgress([path], 'test', interval=0.01)
    if osp.isdir('/proc/self/fdinfo'):
        with open(path, 'rb', buffering=0) as f:
            f.read(10)
            progress._poll()
        assert progress._done[osp.realpath(path)] == 10
    load_word_vectors(path, 'word2vec', show_progress=True)
    err = capsys.readouterr().err
    assert 'Loading word2vec vectors from' in err and 'done' in err
    assert '7 words, 4 dims' in err


def test_save_and_load_roundtrip(tmp_path):
    table = build_class_embeddings(CLASSES, [make_kv(WORDS_A)])
    path = str(tmp_path / 'sub' / 'emb.npz')
    assert save_class_embeddings(path, CLASSES, table) == path
    first = open(path, 'rb').read()
    save_class_embeddings(path, CLASSES, table)
    assert open(path, 'rb').read() == first  # deterministic bytes
    with np.load(path) as data:
        assert data['classes'].dtype.kind == 'U'
        assert list(data['classes']) == list(CLASSES)
        assert data['embeddings'].dtype == np.float32
    loaded = load_class_embeddings(path, CLASSES)
    assert loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, table)
    np.testing.assert_array_equal(load_class_embeddings(path), table)


def _write(tmp_path, name, **arrays):
    path = str(tmp_path / name)
    with open(path, 'wb') as f:
        np.savez(f, **arrays)
    return path


def test_load_errors(tmp_path):
    names = np.array(CLASSES)
    # distinct rows: two classes with one vector are refused
    good = np.arange(1, 13, dtype=np.float32).reshape(4, 3)
    path = _write(tmp_path, 'good.npz', classes=names, embeddings=good)

    with pytest.raises(
            ValueError, match='the file has 4 classes, the '
            'dataset 3') as info:
        load_class_embeddings(path, CLASSES[:3])
    assert 'sky-other' in str(info.value)
    assert 'build_class_embeddings.py' in str(info.value)

    order = (CLASSES[0], CLASSES[2], CLASSES[1], CLASSES[3])
    with pytest.raises(ValueError, match='index 1') as info:
        load_class_embeddings(path, order)
    assert "'cat'" in str(info.value)
    assert "'wall-concrete'" in str(info.value)

    with pytest.raises(ValueError, match="missing from the file: \\['dog'\\]"):
        load_class_embeddings(path, CLASSES[:3] + ('dog', ))

    bad = good.copy()
    bad[2, 1] = np.nan
    nan_path = _write(tmp_path, 'nan.npz', classes=names, embeddings=bad)
    with pytest.raises(ValueError, match="index 2 \\(class 'wall-concrete'"):
        load_class_embeddings(nan_path)

    zero = good.copy()
    zero[3] = 0
    zero_path = _write(tmp_path, 'zero.npz', classes=names, embeddings=zero)
    with pytest.raises(ValueError, match="index 3 \\(class 'sky-other'"):
        load_class_embeddings(zero_path, CLASSES)

    no_key = _write(tmp_path, 'nokey.npz', classes=names, vectors=good)
    with pytest.raises(ValueError, match='embeddings'):
        load_class_embeddings(no_key)

    flat = _write(tmp_path, 'flat.npz', classes=names, embeddings=good[0])
    with pytest.raises(ValueError, match='2-D'):
        load_class_embeddings(flat)

    rows = _write(tmp_path, 'rows.npz', classes=names, embeddings=good[:3])
    with pytest.raises(ValueError, match='3 embedding rows but 4'):
        load_class_embeddings(rows)

    npy = str(tmp_path / 'table.npy')
    np.save(npy, good)
    with pytest.raises(ValueError, match='not an .npz'):
        load_class_embeddings(npy)

    with pytest.raises(FileNotFoundError, match='absent.npz'):
        load_class_embeddings(str(tmp_path / 'absent.npz'))


def test_cli(word_files, tmp_path, capsys):
    tool = load_tool('build_class_embeddings')
    assert tool.parse_source('x/a.bin:word2vec_binary') == dict(
        path='x/a.bin', format='word2vec_binary')
    assert tool.parse_source('C:/x/a.bin') == dict(
        path='C:/x/a.bin', format='auto')

    classes = tmp_path / 'classes.txt'
    classes.write_text('# comment\npottedplant\ncat\n\nwall-concrete\n'
                       'sky-other\ndog\n')
    synonyms = tmp_path / 'synonyms.json'
    synonyms.write_text(json.dumps({'dog': ['cat', 'sky']}))
    out = str(tmp_path / 'out.npz')
    tool.main([
        '--classes',
        str(classes), '--source', word_files['text'] + ':word2vec', '--source',
        word_files['b_binary'], '--synonyms',
        str(synonyms), '--out', out
    ])
    assert '5 classes x 7 dims' in capsys.readouterr().out
    names = list(CLASSES) + ['dog']
    table = load_class_embeddings(out, names)
    np.testing.assert_allclose(
        table[:4], expected_table([WORDS_A, WORDS_B]), rtol=1e-6)
    dog = np.concatenate([
        unit(np.add(WORDS_A['cat'], WORDS_A['sky']) / 2),
        unit(np.add(WORDS_B['cat'], WORDS_B['sky']) / 2)
    ])
    np.testing.assert_allclose(table[4], unit(dog), rtol=1e-6)

    # a built-in class list, the default synonyms and --no-normalize
    words = sorted({w for n in VOC20_CLASSES for w in class_name_to_words(n)})
    rng = np.random.default_rng(0)
    voc_kv = KeyedVectors(vector_size=5)
    voc_kv.add_vectors(words, rng.standard_normal((len(words), 5)))
    voc_path = str(tmp_path / 'voc.kv')
    voc_kv.save(voc_path)
    voc_out = str(tmp_path / 'voc.npz')
    tool.main([
        '--dataset', 'voc', '--source', voc_path, '--no-normalize', '--out',
        voc_out
    ])
    voc = load_class_embeddings(voc_out, VOC20_CLASSES)
    assert voc.shape == (20, 5)
    idx = VOC20_CLASSES.index('tvmonitor')
    np.testing.assert_allclose(
        voc[idx], unit(voc_kv['tv'] + voc_kv['monitor']), rtol=1e-5)
    assert os.path.getsize(voc_out) > 0

    with pytest.raises(SystemExit, match='dog'):
        tool.main([
            '--classes',
            str(classes), '--source', word_files['text'], '--out',
            str(tmp_path / 'x.npz')
        ])
