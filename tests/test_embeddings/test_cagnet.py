"""CaGNet / SIGN published word vectors -> class-embedding tables.

The real files (CaGNet's published embeddings) are read from
``$SIGN_CAGNET_WORD_VECTORS`` or the project's shared reference folder next
to the checkout; tests that need them
are skipped when absent.
"""
import os
import pickle
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import tool_server

from mmseg_sign.datasets import (ZeroShotCOCOStuffDataset,
                                 ZeroShotPascalContextDataset,
                                 ZeroShotPascalVOCDataset)
from mmseg_sign.embeddings import (CAGNET_LABELS, UnsafePickleError,
                                   cagnet_class_embeddings,
                                   cagnet_split_classes, load_class_embeddings,
                                   load_numpy_pickle, read_cagnet_labels)

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / 'tools' / 'dataset_converters' / 'cagnet_word_vectors.py'
REF = Path(
    os.environ.get(
        'SIGN_CAGNET_WORD_VECTORS',
        Path(__file__).resolve().parents[3] /
        'shared/reference/cagnet_word_vectors'))
CLASS_LISTS = REF.parent / 'classes'

# dataset -> (CaGNet folder, dataset class, reference class list)
DATASETS = dict(
    voc=('voc12', ZeroShotPascalVOCDataset, 'voc20.txt'),
    context=('context', ZeroShotPascalContextDataset, 'context33.txt'),
    cocostuff=('cocostuff', ZeroShotCOCOStuffDataset, 'cocostuff171.txt'))

needs_ref = pytest.mark.skipif(
    not (REF / 'voc12' / 'fasttext.pkl').is_file(),
    reason=f'CaGNet word vectors not found at {REF} (set '
    'SIGN_CAGNET_WORD_VECTORS to the folder with voc12/, context/, '
    'cocostuff/)')


def ref(dataset, name):
    return REF / DATASETS[dataset][0] / name


def trusted_pickle(path):
    """Independent reading of the (trusted) reference files."""
    with open(path, 'rb') as f, warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # numpy.core
        return pickle.load(f)


def run_tool(*args):
    return tool_server.run(
        [sys.executable, str(TOOL), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO)


@needs_ref
@pytest.mark.parametrize('dataset', list(DATASETS))
def test_builtin_labels_match_reference(dataset):
    labels = read_cagnet_labels(ref(dataset, 'labels_refined.txt'))
    assert tuple(labels) == CAGNET_LABELS[dataset]


@pytest.mark.slow
@needs_ref
def test_tool_voc_equals_independent_computation(tmp_path):
    out = tmp_path / 'voc20_cagnet_fasttext_word2vec.npz'
    proc = run_tool('--dataset', 'voc', '--fasttext',
                    ref('voc', 'fasttext.pkl'), '--word2vec',
                    ref('voc', 'word2vec.pkl'), '--novel',
                    ref('voc', 'novel_cls.npy'), '--out', out)
    assert proc.returncode == 0, proc.stderr
    assert '20 classes x 600 dims' in proc.stdout
    assert 'published novel classes: pottedplant, sheep, sofa, train, ' \
        'tvmonitor' in proc.stdout

    classes = ZeroShotPascalVOCDataset.METAINFO['classes']
    table = load_class_embeddings(out, classes)  # as the model loads it
    both = np.concatenate([
        trusted_pickle(ref('voc', 'fasttext.pkl')),
        trusted_pickle(ref('voc', 'word2vec.pkl'))
    ], 1)[1:]  # row 0: background; rows 1-20 in the project's order
    expected = both / np.linalg.norm(both, axis=1, keepdims=True)
    np.testing.assert_allclose(table, expected, rtol=0, atol=1e-6)
    with np.load(out) as data:
        assert list(data['classes']) == list(classes)


@needs_ref
@pytest.mark.parametrize('dataset,num_classes', [('voc', 20), ('context', 33),
                                                 ('cocostuff', 171)])
def test_tables_match_project_classes(dataset, num_classes):
    names, table = cagnet_class_embeddings(dataset,
                                           ref(dataset, 'fasttext.pkl'),
                                           ref(dataset, 'word2vec.pkl'))
    classes = list(DATASETS[dataset][1].METAINFO['classes'])
    listed = (CLASS_LISTS / DATASETS[dataset][2]).read_text().split('\n')
    assert names == classes == [n for n in listed if n]
    assert table.shape == (num_classes, 600) and table.dtype == np.float32
    np.testing.assert_allclose(
        np.linalg.norm(table, axis=1), 1, rtol=0, atol=1e-5)

    # independent: published rows whose name is a project class (VOC and
    # Context differ only in pottedplant / tvmonitor)
    published = [
        line.split('\t')[1] for line in ref(
            dataset, 'labels_refined.txt').read_text().splitlines()
    ]
    renamed = {'potted_plant': 'pottedplant', 'tv': 'tvmonitor'}
    if dataset != 'cocostuff':
        published = [renamed.get(n, n) for n in published]
    rows = [published.index(n) for n in classes]
    both = np.concatenate([
        trusted_pickle(ref(dataset, 'fasttext.pkl')),
        trusted_pickle(ref(dataset, 'word2vec.pkl'))
    ], 1)[rows]
    np.testing.assert_allclose(
        table, both / np.linalg.norm(both, axis=1, keepdims=True), atol=1e-6)


@needs_ref
def test_cat_is_closer_to_dog_than_to_train():
    names, table = cagnet_class_embeddings('voc', ref('voc', 'fasttext.pkl'),
                                           ref('voc', 'word2vec.pkl'))
    cat, dog, train = (table[names.index(n)] for n in ('cat', 'dog', 'train'))
    assert cat @ dog > cat @ train


@needs_ref
@pytest.mark.parametrize('dataset', list(DATASETS))
def test_published_split_is_the_project_split(dataset):
    metainfo = DATASETS[dataset][1].METAINFO
    novel = cagnet_split_classes(dataset,
                                 np.load(ref(dataset, 'novel_cls.npy')))
    seen = cagnet_split_classes(dataset, np.load(ref(dataset, 'seen_cls.npy')))
    assert tuple(novel) == tuple(metainfo['unseen_classes'])
    assert sorted(seen + novel) == sorted(metainfo['classes'])


@needs_ref
def test_real_files_load_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        for dataset in DATASETS:
            for name in ('fasttext.pkl', 'word2vec.pkl'):
                array = load_numpy_pickle(ref(dataset, name))
                assert array.shape == (len(CAGNET_LABELS[dataset]), 300)


@needs_ref
def test_labels_override(tmp_path):
    """The raw ``labels.txt`` files work too where they fit the rows."""
    args = ('context', ref('context',
                           'fasttext.pkl'), ref('context', 'word2vec.pkl'))
    _, builtin = cagnet_class_embeddings(*args)
    # "1: aeroplane" ... "33: ceiling" (no row 0), mmseg's names
    _, raw = cagnet_class_embeddings(
        *args, labels_path=ref('context', 'labels.txt'))
    np.testing.assert_array_equal(raw, builtin)
    # ids 0 (unlabeled) to 182: one more than the 182 rows
    with pytest.raises(ValueError, match='has 182 rows.*name 183 rows'):
        cagnet_class_embeddings(
            'cocostuff',
            ref('cocostuff', 'fasttext.pkl'),
            ref('cocostuff', 'word2vec.pkl'),
            labels_path=ref('cocostuff', 'labels.txt'))


# Hostile and malformed pickles (no reference files needed).


class RunsCommand:

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command, )


class Evals:

    def __reduce__(self):
        return eval, ('__import__("os").getcwd()', )


def dump(path, obj, protocol=pickle.DEFAULT_PROTOCOL):
    path.write_bytes(pickle.dumps(obj, protocol=protocol))
    return path


@pytest.mark.parametrize('protocol', [2, 4])
@pytest.mark.parametrize('payload', ['system', 'eval', 'system_in_array'])
def test_hostile_pickle_is_refused(tmp_path, protocol, payload):
    sentinel = tmp_path / 'SENTINEL'
    obj, refused = dict(
        system=(RunsCommand(f'touch {sentinel}'), f'{os.system.__module__}'
                '.system'),
        # protocol 2 writes Python 2's name, __builtin__
        eval=(Evals(), '(builtins|__builtin__).eval'),
        # numpy's globals come first; the payload hides in an object array
        system_in_array=(np.array([RunsCommand(f'touch {sentinel}')],
                                  dtype=object),
                         f'{os.system.__module__}.system'),
    )[payload]
    path = dump(tmp_path / 'evil.pkl', obj, protocol)
    with pytest.raises(UnsafePickleError) as info:
        load_numpy_pickle(path)
    assert isinstance(info.value, pickle.UnpicklingError)
    assert re.fullmatch(
        f'refusing to load {refused} from {re.escape(str(path))}: only '
        'numpy arrays are allowed', str(info.value)), str(info.value)
    assert not sentinel.exists()


@pytest.mark.slow
def test_tool_refuses_hostile_pickle(tmp_path):
    sentinel = tmp_path / 'SENTINEL'
    evil = dump(tmp_path / 'fasttext.pkl', RunsCommand(f'touch {sentinel}'))
    good = dump(tmp_path / 'word2vec.pkl', np.ones((21, 300)))
    out = tmp_path / 'out.npz'
    proc = run_tool('--dataset', 'voc', '--fasttext', evil, '--word2vec', good,
                    '--out', out)
    assert proc.returncode == 1
    assert proc.stderr.startswith('error: refusing to load ')
    assert 'only numpy arrays are allowed' in proc.stderr
    assert 'Traceback' not in proc.stderr
    assert not sentinel.exists() and not out.exists()


@pytest.mark.parametrize('obj,message', [
    ({
        'cat': np.ones(300)
    }, 'holds a dict, not a numpy array'),
    ([[1.0, 2.0]], 'holds a list, not a numpy array'),
    (np.ones(5), r'holds a float64 array of shape \(5,\); expected a 2-D'),
    (np.ones((2, 3), np.int64), 'holds a int64 array of shape'),
])
def test_non_table_pickle_is_a_clear_error(tmp_path, obj, message):
    path = dump(tmp_path / 'vectors.pkl', obj)
    with pytest.raises(ValueError, match=message):
        load_numpy_pickle(path)


def test_truncated_pickle_is_a_clear_error(tmp_path):
    path = tmp_path / 'vectors.pkl'
    path.write_bytes(pickle.dumps(np.ones((3, 4)))[:50])
    with pytest.raises(ValueError, match='cannot read .* as a pickled numpy'):
        load_numpy_pickle(path)


@pytest.mark.parametrize('protocol', range(pickle.HIGHEST_PROTOCOL + 1))
def test_all_pickle_protocols_load(tmp_path, protocol):
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    loaded = load_numpy_pickle(dump(tmp_path / 'a.pkl', array, protocol))
    assert loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, array)


def small_vectors(tmp_path):
    """A 3-row CaGNet-style set: labels, fastText [3, 2], word2vec [3, 2]."""
    labels = tmp_path / 'labels_refined.txt'
    labels.write_text('0\tbackground\n1\tcat\n2\tpotted_plant\n')
    fasttext = dump(tmp_path / 'ft.pkl', np.array([[1., 0], [3, 0], [0, 1]]))
    word2vec = dump(tmp_path / 'w2v.pkl', np.array([[0., 1], [0, 4], [1, 1]]))
    return labels, fasttext, word2vec


def test_small_table_by_hand(tmp_path):
    labels, fasttext, word2vec = small_vectors(tmp_path)
    names, table = cagnet_class_embeddings(
        'voc', fasttext, word2vec, ['pottedplant', 'cat'], labels_path=labels)
    assert names == ['pottedplant', 'cat']
    expected = np.array([[0, 1, 1, 1], [3, 0, 0, 4]]) / np.array([[3**.5], [5]
                                                                  ])
    np.testing.assert_allclose(table, expected, atol=1e-7)


def test_missing_class_is_named(tmp_path):
    labels, fasttext, word2vec = small_vectors(tmp_path)
    with pytest.raises(ValueError) as info:
        cagnet_class_embeddings(
            'voc', fasttext, word2vec, ['cat', 'unicorn'], labels_path=labels)
    assert "['unicorn'] not found" in str(info.value)
    assert "unmatched labels there: ['background', 'potted_plant']" in str(
        info.value)


@pytest.mark.slow
def test_one_file_as_fasttext_and_word2vec_is_refused(tmp_path):
    """The same pickle given as --fasttext and --word2vec built
    a fastText ‖ fastText table, rc 0. The same vectors twice (one file, or
    a copy) are refused naming both files; two different files build."""
    rows = len(CAGNET_LABELS['voc'])
    rng = np.random.default_rng(0)
    ft = dump(tmp_path / 'fasttext.pkl', rng.normal(size=(rows, 300)))
    copy = tmp_path / 'copy.pkl'
    copy.write_bytes(ft.read_bytes())
    for second in (ft, copy):
        message = (f'{re.escape(str(ft))} and {re.escape(str(second))} '
                   'hold the same vectors: --fasttext and --word2vec need '
                   'the two different files')
        with pytest.raises(ValueError, match=message):
            cagnet_class_embeddings('voc', ft, second)
    proc = run_tool('--dataset', 'voc', '--fasttext', ft, '--word2vec', ft,
                    '--out', tmp_path / 'voc.npz')
    assert proc.returncode != 0 and 'hold the same vectors' in proc.stderr
    assert not (tmp_path / 'voc.npz').exists()
    w2v = dump(tmp_path / 'word2vec.pkl', rng.normal(size=(rows, 300)))
    names, table = cagnet_class_embeddings('voc', ft, w2v)
    assert table.shape == (len(names), 600)
