# Copyright (c) OpenMMLab. All rights reserved.
"""Read gensim ``.kv`` / ``.model`` / ``.wv`` files safely.

gensim's own ``KeyedVectors.load`` unpickles the file and would run any
code a hostile file names; :func:`load_keyedvectors` reads the same files
through an allow-list instead (see its docstring).
"""
import bz2
import gzip
import os
import os.path as osp
from typing import Any, Optional

import numpy as np
from gensim.models import KeyedVectors

from ..utils.safe_pickle import (RestrictedUnpickler, UnsafePickleError,
                                 numpy_array_globals)

_COMPRESSION_OPENERS = {'.gz': gzip.open, '.bz2': bz2.open}


def _open_maybe_compressed(path: str):
    """Open a file in binary mode, decompressing ``.gz`` / ``.bz2``."""
    ext = osp.splitext(path)[1].lower()
    return _COMPRESSION_OPENERS.get(ext, open)(path, 'rb')


_CONVERT_HINT = (
    'If you trust the file, convert it to a format that holds no code, in '
    'a separate trusted environment: `from gensim.models import '
    'KeyedVectors; KeyedVectors.load(PATH).save_word2vec_format('
    "'vectors.bin', binary=True)` (for a saved Word2Vec / FastText model: "
    "`Word2Vec.load(PATH).wv.save_word2vec_format('vectors.bin', "
    "binary=True)`), then use `vectors.bin:word2vec_binary`.")

_KEYEDVECTORS_REFUSAL = (
    'a gensim .kv / .model / .wv file may hold only gensim 4.x '
    'KeyedVectors, FastTextKeyedVectors, Word2Vec or FastText objects and '
    'numpy arrays; gensim would unpickle (run) anything else it names. ' +
    _CONVERT_HINT)

# The attribute lists gensim's ``SaveLoad.save`` stores in the pickle.
_SPECIALS = ('__recursive_saveloads', '__numpys', '__scipys', '__ignoreds')


def _gensim_classes() -> tuple:
    """The gensim classes a KeyedVectors / model pickle may instantiate."""
    from gensim.models.fasttext import FastText, FastTextKeyedVectors
    from gensim.models.word2vec import Word2Vec
    return KeyedVectors, FastTextKeyedVectors, Word2Vec, FastText


def _instantiator(cls: type, path: str) -> type:
    """A stand-in for the gensim class ``cls`` in the allow-list.

    Unpickling makes an empty ``cls`` instance (``object.__new__``: no
    gensim ``__init__`` runs) that ``BUILD`` fills with the pickled
    attributes, as ``pickle`` does for the real class. A pickle that calls
    the class with arguments is refused.
    """
    name = f'{cls.__module__}.{cls.__qualname__}'

    def __new__(stub, *args, **kwargs):
        if args or kwargs:
            raise UnsafePickleError(
                f'refusing to call {name} with arguments from {path}: '
                f'{_KEYEDVECTORS_REFUSAL}')
        return object.__new__(cls)

    return type(cls.__name__, (), {'__new__': __new__})


def _keyedvectors_globals(path: str) -> dict:
    """``(module, name) -> object`` that gensim 4.x ``KeyedVectors`` /
    ``Word2Vec`` / ``FastText`` pickles use, found by recording the globals
    of real saved files (protocols 2 and 4)."""
    import collections

    from gensim.utils import call_on_class_only
    allowed = numpy_array_globals(scalars=True)
    instantiators = {}
    for cls in _gensim_classes():
        stub = _instantiator(cls, path)
        instantiators[stub] = cls
        allowed[(cls.__module__, cls.__qualname__)] = stub

    def reconstructor(cls, base, state):
        """``copyreg._reconstructor`` (protocols 0 and 1), for the gensim
        classes only."""
        if cls not in instantiators or base is not object or \
                state is not None:
            raise UnsafePickleError(
                f'refusing copyreg._reconstructor({cls!r}, {base!r}, ...) '
                f'from {path}: {_KEYEDVECTORS_REFUSAL}')
        return cls()

    # protocols <= 2 write Python 2's module names
    for builtins in ('builtins', '__builtin__'):
        for obj in (frozenset, set, int, float, hash, object):
            allowed[(builtins, obj.__name__)] = obj
    for copyreg in ('copyreg', 'copy_reg'):
        allowed[(copyreg, '_reconstructor')] = reconstructor
    allowed[('collections', 'defaultdict')] = collections.defaultdict
    allowed[('collections', 'OrderedDict')] = collections.OrderedDict
    # a model's `load` attribute (raises AttributeError when called)
    allowed[('gensim.utils', 'call_on_class_only')] = call_on_class_only
    # a model's random state (numpy RandomState / Generator)
    try:
        from numpy.random import _pickle as random_pickle
    except ImportError:  # pragma: no cover
        random_pickle = None
    if random_pickle is not None:
        for name in ('__randomstate_ctor', '__generator_ctor',
                     '__bit_generator_ctor'):
            if hasattr(random_pickle, name):
                allowed[('numpy.random._pickle',
                         name)] = getattr(random_pickle, name)
        for bit_generator in getattr(random_pickle, 'BitGenerators',
                                     {}).values():
            allowed[(bit_generator.__module__,
                     bit_generator.__name__)] = bit_generator
    return allowed


def _load_keyedvectors_specials(obj: Any, fname: str, mmap: Optional[str],
                                compress: bool, path: str) -> None:
    """gensim's ``SaveLoad._load_specials``, without unchecked pickles.

    Reads the arrays that ``save`` stored next to the file (``.npy``, or
    ``.npz`` for compressed files) with ``allow_pickle=False``, recursing
    into sub-objects (a model's ``wv``) first, as gensim does; then runs
    the class's own ``_load_specials`` for its up-conversion of older
    files, with the attribute lists emptied so that gensim reads no file.
    Sparse matrices (``__scipys``, separate pickles) are refused.
    """
    classes = _gensim_classes()
    specials = {}
    for key in _SPECIALS:
        names = obj.__dict__.get(key, [])
        if not isinstance(names, (list, tuple)) or not all(
                isinstance(n, str) and n.isidentifier() for n in names):
            raise ValueError(f'{path}: malformed gensim attribute list '
                             f'{key}={names!r}. {_CONVERT_HINT}')
        specials[key] = list(names)
    if specials['__scipys']:
        raise ValueError(
            f'{path}: {fname} keeps the sparse matrices '
            f'{specials["__scipys"]} in separate pickles, which are not '
            f'read (they could run code). {_CONVERT_HINT}')
    suffix = 'npz' if compress else 'npy'
    for attrib in specials['__recursive_saveloads']:
        child = obj.__dict__.get(attrib)
        if type(child) not in classes:
            raise ValueError(
                f'{path}: attribute {attrib!r} is a '
                f'{type(child).__name__}, not a gensim object to load '
                f'recursively. {_CONVERT_HINT}')
        _load_keyedvectors_specials(child, f'{fname}.{attrib}', mmap, compress,
                                    path)
    for attrib in specials['__numpys']:
        array_path = f'{fname}.{attrib}.{suffix}'
        if not osp.isfile(array_path):
            raise FileNotFoundError(
                f'{array_path} not found: {path} keeps its array {attrib!r} '
                'in that file (gensim saves large arrays next to the '
                '.kv / .model file); copy it along.')
        try:
            if compress:
                with np.load(array_path, allow_pickle=False) as data:
                    value = data['val']
            else:
                value = np.load(array_path, mmap_mode=mmap, allow_pickle=False)
        except Exception as err:
            raise ValueError(
                f'cannot read {array_path}, the array {attrib!r} of {path} '
                f'({type(err).__name__}: {err})') from None
        obj.__dict__[attrib] = value
    for attrib in specials['__ignoreds']:
        obj.__dict__[attrib] = None
    for key in _SPECIALS:
        obj.__dict__[key] = []
    type(obj)._load_specials(obj, fname, mmap, compress,
                             lambda *args: '.'.join(args + (suffix, )))


def load_keyedvectors(path: str, mmap: Optional[str] = None) -> KeyedVectors:
    """Load a gensim 4.x ``KeyedVectors.save`` / ``Word2Vec.save`` /
    ``FastText.save`` file without trusting its pickle.

    gensim's ``KeyedVectors.load`` unpickles the file, which runs whatever
    the file names. Here the pickle is read by
    :class:`~mmseg_sign.utils.safe_pickle.RestrictedUnpickler` with an
    allow-list of what real gensim files hold (the gensim classes, built
    empty and filled with their pickled attributes without running their
    constructors, numpy arrays and scalars, numpy random states, a few
    builtins); anything else raises
    :class:`~mmseg_sign.utils.safe_pickle.UnsafePickleError` naming the
    file and the refused global, before it is called. Arrays stored next to
    the file (``save(..., sep_limit=...)``) are read with
    ``np.load(..., allow_pickle=False)``.

    Args:
        path (str): The file (``.gz`` / ``.bz2`` compressed too).
        mmap (str, optional): ``mmap_mode`` for the separately stored
            arrays, as in gensim. Defaults to None.

    Returns:
        gensim.models.KeyedVectors: The vectors (a model's ``.wv``).
    """
    path = os.fspath(path)
    compress = path.endswith(('.gz', '.bz2'))
    if compress and mmap:
        raise ValueError(f'cannot mmap the compressed file {path}; use '
                         'mmap=None or decompress it.')
    with _open_maybe_compressed(path) as f:
        try:
            loaded = RestrictedUnpickler(f, path, _keyedvectors_globals(path),
                                         _KEYEDVECTORS_REFUSAL).load()
        except UnsafePickleError:
            raise
        except Exception as err:
            raise ValueError(
                f'cannot read {path} as a gensim KeyedVectors file '
                f'({type(err).__name__}: {err}). Is it a gensim '
                '`KeyedVectors.save` / model `save` file? Otherwise pass its '
                'format explicitly (PATH:word2vec, PATH:word2vec_binary, '
                'PATH:fasttext).') from None
    classes = _gensim_classes()
    if type(loaded) not in classes:
        raise ValueError(
            f'{path} holds a {type(loaded).__name__}, not a gensim '
            'KeyedVectors or Word2Vec / FastText model.')
    _load_keyedvectors_specials(loaded, path, mmap, compress, path)
    vectors = loaded if isinstance(loaded, KeyedVectors) else \
        loaded.__dict__.get('wv')
    if not isinstance(vectors, KeyedVectors) or not isinstance(
            getattr(vectors, 'vectors', None), np.ndarray) or \
            vectors.vectors.ndim != 2:
        raise ValueError(f'{path}: no 2-D vectors array found in the '
                         f'{type(loaded).__name__}.')
    return vectors
