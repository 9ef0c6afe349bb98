"""gensim ``.kv`` / ``.model`` / ``.wv`` files are read through an
allow-list (:mod:`mmseg_sign.embeddings.keyedvectors`,
``load_keyedvectors``), never unpickled blindly: hostile files are refused
naming the file and the global, before anything runs; real gensim files
load exactly as gensim loads them. Unreadable class-embedding tables get
the project's message naming the file and the fix, from the loader and from
``SIGNHead``."""
import os
import os.path as osp
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import tool_server
from gensim.models import FastText, KeyedVectors, Word2Vec
from mmseg.registry import MODELS

from mmseg_sign.embeddings import (UnsafePickleError, build_class_embeddings,
                                   load_class_embeddings, load_keyedvectors,
                                   load_word_vectors, read_class_embeddings,
                                   save_class_embeddings)

REPO = Path(__file__).resolve().parents[2]

SYSTEM = f'{os.system.__module__}.system'  # posix.system on Linux

CONVERT_HINT = "save_word2vec_format('vectors.bin', binary=True)"

TABLE_TOOLS = ('tools/build_class_embeddings.py',
               'tools/dataset_converters/cagnet_word_vectors.py')


class RunsCommand:
    """Unpickling it runs ``command`` (the payload of a hostile file)."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command, )


class CallsKeyedVectors:
    """Unpickling it calls ``KeyedVectors(5, 3)`` (a gensim constructor with
    arguments from the file)."""

    def __reduce__(self):
        return KeyedVectors, (5, 3)


def small_kv(words=('cat', 'sky', 'wall'), dim=4, seed=0):
    kv = KeyedVectors(vector_size=dim)
    rng = np.random.default_rng(seed)
    kv.add_vectors(
        list(words),
        rng.standard_normal((len(words), dim)).astype(np.float32))
    return kv


# -------------------------------------------------- real gensim files load
SENTENCES = [['cat', 'sky', 'wall', 'tree'], ['sky', 'tree', 'road']] * 10


def _save(kind, path):
    """Write a real gensim file; return gensim's own (trusted) loader."""
    if kind == 'kv':
        small_kv().save(path)
    elif kind == 'kv_protocol2':
        small_kv().save(path, pickle_protocol=2)
    elif kind == 'kv_protocol0':
        small_kv().save(path, pickle_protocol=0)
    elif kind == 'kv_separate_arrays':
        small_kv().save(path, sep_limit=0)
    elif kind == 'kv_gz':
        small_kv().save(path, sep_limit=0)  # arrays in a .npz next to it
    elif kind in ('fasttext_kv', 'fasttext_model'):
        model = FastText(
            SENTENCES,
            vector_size=4,
            min_count=1,
            workers=1,
            bucket=50,
            seed=0)
        (model.wv if kind == 'fasttext_kv' else model).save(path)
        if kind == 'fasttext_model':
            return lambda p: FastText.load(p).wv
    elif kind == 'word2vec_model':
        Word2Vec(
            SENTENCES, vector_size=4, min_count=1, workers=1,
            seed=0).save(path)
        return lambda p: Word2Vec.load(p).wv
    return KeyedVectors.load


# ------------------------------------------------ unreadable embedding tables
def _write_bad_table(tmp_path, case):
    """``(path, text the message must quote)`` for one unreadable table."""
    path = tmp_path / 'emb.npz'
    if case == 'none':
        return None, 'None'
    if case == 'missing':
        return str(tmp_path / 'absent.npz'), str(tmp_path / 'absent.npz')
    if case == 'directory':
        path.mkdir()
    elif case == 'empty':
        path.write_bytes(b'')
    elif case == 'text':
        path.write_text('cat 0.1 0.2\nsky 0.3 0.4\n')
    elif case == 'npy':
        np.save(str(tmp_path / 'emb.npy'), np.ones((2, 3)))
        os.replace(tmp_path / 'emb.npy', path)
    elif case == 'pickle':
        path.write_bytes(
            pickle.dumps({
                'classes': ['a'],
                'embeddings': np.ones((1, 3))
            }))
    elif case in ('truncated', 'damaged'):
        save_class_embeddings(
            str(path), ['a', 'b', 'c'], np.eye(3, 4, dtype=np.float32))
        data = bytearray(path.read_bytes())
        if case == 'truncated':
            data = data[:len(data) // 2]
        else:  # a damaged header of the first member
            data[40:60] = b'\xff' * 20
        path.write_bytes(bytes(data))
    elif case == 'object_array':
        np.savez(
            str(path),
            classes=np.array(['a', 'b'], dtype=object),
            embeddings=np.ones((2, 3)))
    elif case == 'no_keys':
        np.savez(str(path), vectors=np.ones((2, 3)))
    return str(path), str(path)


BAD_TABLES = [
    'none', 'missing', 'directory', 'empty', 'text', 'npy', 'pickle',
    'truncated', 'damaged', 'object_array', 'no_keys'
]


def _assert_project_message(err, quoted):
    message = str(err)
    assert isinstance(err, (ValueError, FileNotFoundError)), repr(err)
    assert quoted in message, message
    for tool in TABLE_TOOLS:
        assert tool in message, message
    # not numpy's raw (and misleading) words
    assert 'allow_pickle' not in message, message


# ------------------------------------------------------ hostile gensim files
@pytest.mark.parametrize('protocol', [2, 4])
@pytest.mark.parametrize('ext', ['.kv', '.model', '.wv'])
@pytest.mark.parametrize('where', ['top', 'inside_keyedvectors'])
def test_hostile_keyedvectors_file_is_refused(tmp_path, protocol, ext, where):
    sentinel = tmp_path / 'SENTINEL'
    payload = RunsCommand(f'touch {sentinel}')
    if where == 'inside_keyedvectors':  # a real KV with a poisoned attribute
        obj = small_kv()
        obj.note = payload
    else:
        obj = payload
    path = tmp_path / f'evil{ext}'
    path.write_bytes(pickle.dumps(obj, protocol=protocol))

    for load in (lambda: load_word_vectors(path, show_progress=False),
                 lambda: build_class_embeddings(['cat'], [str(path)],
                                                show_progress=False)):
        with pytest.raises(UnsafePickleError) as info:
            load()
        message = str(info.value)
        assert message.startswith(f'refusing to load {SYSTEM} from {path}:')
        assert CONVERT_HINT in message
        assert not sentinel.exists()


def test_gensim_class_called_with_arguments_is_refused(tmp_path):
    path = tmp_path / 'ctor.kv'
    path.write_bytes(pickle.dumps(CallsKeyedVectors(), protocol=4))
    refused = 'gensim.models.keyedvectors.KeyedVectors'
    with pytest.raises(
            UnsafePickleError,
            match=f'refusing to call {re.escape(refused)} with '
            f'arguments from {re.escape(str(path))}'):
        load_keyedvectors(path)


@pytest.mark.parametrize('content,message', [
    (b'', 'EOFError'),
    (pickle.dumps(small_kv(), protocol=4)[:120], 'truncated'),
    (pickle.dumps({'cat': np.ones(4)}), 'holds a dict, not a gensim'),
    (b'cat 1 2 3\n', 'cannot read'),
])
def test_malformed_keyedvectors_file_is_a_clear_error(tmp_path, content,
                                                      message):
    path = tmp_path / 'vectors.kv'
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as info:
        load_word_vectors(path, show_progress=False)
    assert str(path) in str(info.value)


def test_separate_arrays_are_read_without_pickle(tmp_path):
    """``save(sep_limit=0)`` keeps arrays in ``.npy`` files next to the
    ``.kv``: they are read with ``allow_pickle=False``."""
    path = str(tmp_path / 'sep.kv')
    small_kv().save(path, sep_limit=0)
    npy = path + '.vectors.npy'
    assert osp.isfile(npy)
    sentinel = tmp_path / 'SENTINEL'
    np.save(
        npy,
        np.array([RunsCommand(f'touch {sentinel}')], dtype=object),
        allow_pickle=True)
    with pytest.raises(ValueError, match=re.escape(npy)):
        load_keyedvectors(path)
    assert not sentinel.exists()
    os.remove(npy)
    with pytest.raises(FileNotFoundError, match=re.escape(npy)):
        load_keyedvectors(path)


@pytest.mark.slow
def test_tool_refuses_hostile_kv_cleanly(tmp_path):
    sentinel = tmp_path / 'SENTINEL'
    evil = tmp_path / 'evil.kv'
    evil.write_bytes(pickle.dumps(RunsCommand(f'touch {sentinel}')))
    out = tmp_path / 'out.npz'
    proc = tool_server.run([
        sys.executable,
        str(REPO / 'tools' / 'build_class_embeddings.py'), '--dataset', 'voc',
        '--source',
        str(evil), '--out',
        str(out)
    ],
                           capture_output=True,
                           text=True,
                           cwd=str(REPO))
    assert proc.returncode == 1, proc.stderr
    assert f'error: refusing to load {SYSTEM} from {evil}:' in proc.stderr
    assert CONVERT_HINT in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not sentinel.exists() and not out.exists()


@pytest.mark.parametrize('kind,name', [
    ('kv', 'vectors.kv'),
    ('kv_protocol2', 'vectors.kv'),
    ('kv_protocol0', 'vectors.kv'),
    ('kv_separate_arrays', 'vectors.kv'),
    ('kv_gz', 'vectors.kv.gz'),
    ('fasttext_kv', 'vectors.kv'),
    ('fasttext_model', 'vectors.model'),
    ('word2vec_model', 'vectors.model'),
])
def test_real_gensim_files_load_like_gensim(tmp_path, kind, name):
    path = str(tmp_path / name)
    gensim_load = _save(kind, path)
    expected = gensim_load(path)  # trusted: we wrote it
    vectors = load_word_vectors(path, show_progress=False)
    assert type(vectors) is type(expected)
    assert vectors.index_to_key == expected.index_to_key
    assert vectors.key_to_index == expected.key_to_index
    np.testing.assert_array_equal(vectors.vectors, expected.vectors)
    for word in expected.index_to_key:
        np.testing.assert_array_equal(vectors[word], expected[word])
    if 'fasttext' in kind:  # subword vectors of an unknown word
        np.testing.assert_array_equal(vectors.vectors_ngrams,
                                      expected.vectors_ngrams)
        np.testing.assert_array_equal(vectors['skies'], expected['skies'])


def test_mmap_of_separate_arrays(tmp_path):
    path = str(tmp_path / 'vectors.kv')
    small_kv().save(path, sep_limit=0)
    vectors = load_word_vectors(path, mmap='r', show_progress=False)
    assert isinstance(vectors.vectors, np.memmap)
    np.testing.assert_array_equal(vectors.vectors, small_kv().vectors)


@pytest.mark.parametrize('case', BAD_TABLES)
def test_unreadable_table_names_file_and_fix(tmp_path, case):
    path, quoted = _write_bad_table(tmp_path, case)
    for load in (read_class_embeddings, load_class_embeddings):
        with pytest.raises((ValueError, FileNotFoundError)) as info:
            load(path)
        _assert_project_message(info.value, quoted)
    if case in ('missing', 'directory'):
        assert isinstance(info.value, FileNotFoundError)


@pytest.mark.parametrize('case', BAD_TABLES)
def test_sign_head_reports_unreadable_table(tmp_path, case):
    path, quoted = _write_bad_table(tmp_path, case)
    cfg = dict(
        type='SIGNHead',
        in_channels=8,
        channels=8,
        num_classes=3,
        class_embeddings=path,
        latent_channels=4,
        generator_hidden=(16, ),
        generator_dropout=0.1,
        discriminator_hidden=(16, ),
        trunk_channels=16)
    with pytest.raises((ValueError, FileNotFoundError)) as info:
        if case == 'missing':
            # a missing file may come from the checkpoint (inference from
            # any directory); training without it fails with the message
            MODELS.build(cfg).require_table()
        else:
            MODELS.build(cfg)
    _assert_project_message(info.value, quoted)


def test_sign_head_reads_a_good_table(embedding_table):
    path, names = embedding_table
    head = MODELS.build(
        dict(
            type='SIGNHead',
            in_channels=8,
            channels=8,
            num_classes=5,
            class_embeddings=path,
            latent_channels=4,
            generator_hidden=(16, ),
            generator_dropout=0.1,
            discriminator_hidden=(16, ),
            trunk_channels=16))
    assert head.class_names == tuple(names)
    np.testing.assert_array_equal(head.class_embedding.numpy(),
                                  load_class_embeddings(path, names))
