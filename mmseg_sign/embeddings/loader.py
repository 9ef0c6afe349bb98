# Copyright (c) OpenMMLab. All rights reserved.
"""Load word vectors with gensim (word2vec text / binary, fastText, KV).

gensim's own ``KeyedVectors.load`` unpickles the file and would run any
code a hostile file names; :func:`load_keyedvectors` reads the same files
through an allow-list instead (see its docstring).
"""
import bz2
import glob
import gzip
import os
import os.path as osp
import struct
import sys
import threading
import time
from typing import Any, Iterable, List, Optional

import numpy as np
from gensim.models import KeyedVectors

from ..utils.safe_pickle import (RestrictedUnpickler, UnsafePickleError,
                                 numpy_array_globals)

WORD_VECTOR_FORMATS = ('word2vec', 'word2vec_binary', 'fasttext',
                       'keyedvectors')

# First int32 (little endian) of a Facebook fastText ``.bin`` model.
FASTTEXT_MAGIC = 793712314

_COMPRESSION_OPENERS = {'.gz': gzip.open, '.bz2': bz2.open}
_TEXT_EXTENSIONS = ('.txt', '.vec')
_KEYEDVECTORS_EXTENSIONS = ('.kv', '.model', '.wv')


def _open_maybe_compressed(path: str):
    """Open a file in binary mode, decompressing ``.gz`` / ``.bz2``."""
    ext = osp.splitext(path)[1].lower()
    return _COMPRESSION_OPENERS.get(ext, open)(path, 'rb')


def _is_fasttext_bin(path: str) -> bool:
    """Whether the file starts with the fastText binary magic number."""
    with _open_maybe_compressed(path) as f:
        head = f.read(4)
    return len(head) == 4 and struct.unpack('<i', head)[0] == FASTTEXT_MAGIC


def _has_word2vec_header(path: str) -> bool:
    """Whether a text file starts with the ``<count> <dim>`` header line.

    GloVe ``.txt`` files have no header; gensim reads them with
    ``no_header=True``.
    """
    with _open_maybe_compressed(path) as f:
        first = f.readline(4096).split()
    return len(first) == 2 and all(tok.isdigit() for tok in first)


def guess_format(path: str) -> str:
    """Guess the word-vector format of ``path``.

    Rules (a ``.gz`` / ``.bz2`` suffix is looked through):

    - ``.bin``: ``'fasttext'`` if the file starts with the fastText magic
      number (Facebook ``cc.en.300.bin``), else ``'word2vec_binary'``
      (``GoogleNews-vectors-negative300.bin``). The header is read, not
      the name.
    - ``.txt`` / ``.vec``: ``'word2vec'`` (text; fastText ``.vec`` files
      are word2vec text files; header-less GloVe files are detected when
      loading).
    - ``.kv`` / ``.model`` / ``.wv``: ``'keyedvectors'`` (gensim
      ``KeyedVectors.save`` or a saved gensim model; read through an
      allow-list by :func:`load_keyedvectors`, never unpickled blindly).

    Anything else raises ``ValueError``: pass the format explicitly.
    """
    root, ext = osp.splitext(path)
    ext = ext.lower()
    if ext in _COMPRESSION_OPENERS:
        ext = osp.splitext(root)[1].lower()
    if ext == '.bin':
        return 'fasttext' if _is_fasttext_bin(path) else 'word2vec_binary'
    if ext in _TEXT_EXTENSIONS:
        return 'word2vec'
    if ext in _KEYEDVECTORS_EXTENSIONS:
        return 'keyedvectors'
    raise ValueError(
        f'Cannot guess the word-vector format of {path!r} from its '
        f'extension {ext!r}; pass one of {WORD_VECTOR_FORMATS} explicitly '
        '(e.g. --source PATH:word2vec_binary).')


def _format_bytes(num: float) -> str:
    """Human-readable byte count, e.g. ``'3.4 GB'``."""
    for unit in ('B', 'KB', 'MB'):
        if num < 1024:
            return f'{num:.1f} {unit}'
        num /= 1024.0
    return f'{num:.2f} GB'


class ReadProgress:
    """Show how much of some files a loader has read, on stderr.

    gensim opens files itself (``smart_open`` 9 does not accept file-like
    objects), so the read position is polled from
    ``/proc/self/fdinfo`` in a background thread: no gensim internals are
    patched. Where ``/proc`` is missing only the elapsed time is shown.
    For compressed files the compressed bytes are counted.

    Args:
        paths (list[str]): Files the loader reads.
        desc (str): Text shown before the progress.
        interval (float): Seconds between updates. Defaults to 0.5.
        stream: Output stream. Defaults to ``sys.stderr``.
    """

    def __init__(self, paths: Iterable[str], desc: str,
                 interval: float = 0.5, stream=None):
        self.paths = [osp.realpath(p) for p in paths]
        self.total = sum(osp.getsize(p) for p in self.paths)
        self.desc = desc
        self.interval = interval
        self.stream = stream if stream is not None else sys.stderr
        self._done = {p: 0 for p in self.paths}
        self._stop = threading.Event()
        self._thread = None
        self._start = 0.0
        self._proc = osp.isdir('/proc/self/fdinfo')

    def _poll(self) -> None:
        """Update the largest read position seen for every file."""
        if not self._proc:
            return
        try:
            fds = os.listdir('/proc/self/fd')
        except OSError:
            return
        for fd in fds:
            try:
                target = os.readlink(f'/proc/self/fd/{fd}')
                if target not in self._done:
                    continue
                with open(f'/proc/self/fdinfo/{fd}') as f:
                    for line in f:
                        if line.startswith('pos:'):
                            pos = int(line.split()[1])
                            self._done[target] = max(self._done[target],
                                                     pos)
                            break
            except (OSError, ValueError):
                continue  # the fd was closed meanwhile

    def _line(self) -> str:
        elapsed = time.time() - self._start
        if not self._proc or self.total == 0:
            return f'\r{self.desc}: {elapsed:.0f} s'
        done = min(sum(self._done.values()), self.total)
        frac = done / self.total
        width = 30
        bar = '>' * int(width * frac) + ' ' * (width - int(width * frac))
        rate = done / elapsed if elapsed > 0 else 0.0
        return (f'\r{self.desc}: [{bar}] {_format_bytes(done)}/'
                f'{_format_bytes(self.total)} ({frac:.0%}), '
                f'{_format_bytes(rate)}/s, {elapsed:.0f} s')

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._poll()
            self.stream.write(self._line())
            self.stream.flush()

    def __enter__(self) -> 'ReadProgress':
        self._start = time.time()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        elapsed = time.time() - self._start
        status = 'failed' if exc_type is not None else 'done'
        # Clear a partially drawn progress line, then report.
        self.stream.write(f'\r{self.desc}: {status} in {elapsed:.1f} s'
                          + ' ' * 40 + '\n')
        self.stream.flush()


def _files_read(path: str, fmt: str) -> List[str]:
    """Files that loading ``path`` in format ``fmt`` reads."""
    files = [path]
    if fmt == 'keyedvectors':
        # KeyedVectors.save stores large arrays next to the pickle.
        files += sorted(glob.glob(glob.escape(path) + '.*.np[yz]'))
    return files


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
    'numpy arrays; gensim would unpickle (run) anything else it names. '
    + _CONVERT_HINT)

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
                allowed[('numpy.random._pickle', name)] = getattr(
                    random_pickle, name)
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
        _load_keyedvectors_specials(child, f'{fname}.{attrib}', mmap,
                                    compress, path)
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
                value = np.load(array_path, mmap_mode=mmap,
                                allow_pickle=False)
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
            loaded = RestrictedUnpickler(
                f, path, _keyedvectors_globals(path),
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


def load_word_vectors(path: str,
                      fmt: str = 'auto',
                      show_progress: bool = True,
                      **kwargs) -> KeyedVectors:
    """Load a word-vector file with gensim.

    Args:
        path (str): The file (``.gz`` / ``.bz2`` compressed word2vec files
            work too).
        fmt (str): ``'word2vec'`` (text, e.g. fastText ``.vec``; GloVe
            files without header are detected), ``'word2vec_binary'``
            (``GoogleNews-vectors-negative300.bin``), ``'fasttext'``
            (Facebook ``.bin`` model, via
            ``gensim.models.fasttext.load_facebook_vectors``),
            ``'keyedvectors'`` (a ``KeyedVectors.save`` / model ``save``
            file, read safely by :func:`load_keyedvectors`) or ``'auto'``
            (see :func:`guess_format`). Defaults to ``'auto'``.
        show_progress (bool): Print read progress to stderr. Defaults to
            True.
        **kwargs: Passed to the loader, e.g. ``limit=500000`` or
            ``unicode_errors='ignore'`` for word2vec files, ``mmap='r'``
            for ``'keyedvectors'``.

    Returns:
        gensim.models.KeyedVectors: The vectors (``FastTextKeyedVectors``
        for ``'fasttext'``).
    """
    path = os.fspath(path)
    if not osp.isfile(path):
        raise FileNotFoundError(f'Word-vector file not found: {path!r}')
    fmt = fmt.lower() if isinstance(fmt, str) else fmt
    if fmt in (None, 'auto'):
        fmt = guess_format(path)
    if fmt not in WORD_VECTOR_FORMATS:
        raise ValueError(f'Unknown word-vector format {fmt!r} for {path!r}; '
                         f"expected one of {WORD_VECTOR_FORMATS} or 'auto'.")
    if osp.getsize(path) == 0 and fmt != 'keyedvectors':  # that: below
        raise ValueError(_unreadable_vectors(path, fmt, EOFError()))

    def _load() -> KeyedVectors:
        if fmt in ('word2vec', 'word2vec_binary'):
            binary = fmt == 'word2vec_binary'
            if not binary and 'no_header' not in kwargs:
                kwargs['no_header'] = not _has_word2vec_header(path)
            return KeyedVectors.load_word2vec_format(
                path, binary=binary, **kwargs)
        if fmt == 'fasttext':
            from gensim.models.fasttext import load_facebook_vectors
            return load_facebook_vectors(path, **kwargs)
        # Not gensim's KeyedVectors.load: it unpickles (runs) the file.
        return load_keyedvectors(path, **kwargs)

    def _load_named() -> KeyedVectors:
        try:
            return _load()
        except (UnsafePickleError, FileNotFoundError):
            raise  # already name the file and the fix
        except (ValueError, EOFError, KeyError, IndexError, TypeError,
                AssertionError, struct.error, RuntimeError, OSError) as err:
            if path in str(err) and isinstance(err, ValueError):
                raise
            raise ValueError(_unreadable_vectors(path, fmt, err)) from None

    if not show_progress:
        vectors = _load_named()
    else:
        files = _files_read(path, fmt)
        size = _format_bytes(sum(osp.getsize(f) for f in files))
        print(f'Loading {fmt} vectors from {path} ({size})', file=sys.stderr)
        with ReadProgress(files, osp.basename(path)):
            vectors = _load_named()
        print(f'{path}: {len(vectors.index_to_key)} words, '
              f'{vectors.vector_size} dims', file=sys.stderr)
    if not isinstance(vectors, KeyedVectors):
        raise TypeError(f'{path!r} loaded as {type(vectors).__name__}, not '
                        'gensim KeyedVectors; check the format.')
    return vectors


_FORMAT_HELP = {
    'word2vec': ('a word2vec text file (.txt / .vec) holds an optional '
                 'header line "<words> <dims>", then one word a line '
                 'followed by its <dims> numbers, the same count on every '
                 'line'),
    'word2vec_binary': ('a word2vec binary file (.bin) holds a header line '
                        '"<words> <dims>", then each word, a space and its '
                        '<dims> float32 values'),
    'fasttext': 'a Facebook fastText model .bin (e.g. cc.en.300.bin)',
    'keyedvectors': 'a gensim KeyedVectors.save / model save file',
}


def _unreadable_vectors(path: str, fmt: str, err: BaseException) -> str:
    """The message for a word-vector file gensim could not parse."""
    size = osp.getsize(path) if osp.isfile(path) else -1
    what = 'it is empty (0 bytes)' if size == 0 else (
        f'{type(err).__name__}: {str(err).strip() or "no details"}')
    return (f'Cannot read {path!r} as {fmt} word vectors ({what}). '
            f'Expected {_FORMAT_HELP.get(fmt, fmt)}. If the file is '
            'complete and in another format, name it: PATH:word2vec '
            '(text), PATH:word2vec_binary, PATH:fasttext or '
            'PATH:keyedvectors; if it was cut short, copy or download it '
            'again.')


def describe_source(vectors: KeyedVectors,
                    path: Optional[str] = None) -> str:
    """A short description of a word-vector source for messages."""
    what = f'{type(vectors).__name__}, {vectors.vector_size} dims'
    return f'{path!r} ({what})' if path else f'in-memory {what}'
