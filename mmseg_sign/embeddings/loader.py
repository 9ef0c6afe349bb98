# Copyright (c) OpenMMLab. All rights reserved.
"""Load word vectors with gensim (word2vec text / binary, fastText, KV;
KV files through the allow-list of :mod:`.keyedvectors`)."""
import glob
import os
import os.path as osp
import struct
import sys
from typing import List, Optional

from gensim.models import KeyedVectors

from ..utils.safe_pickle import UnsafePickleError
from .keyedvectors import (_COMPRESSION_OPENERS, _open_maybe_compressed,
                           load_keyedvectors)
from .progress import ReadProgress, _format_bytes

WORD_VECTOR_FORMATS = ('word2vec', 'word2vec_binary', 'fasttext',
                       'keyedvectors')

# First int32 (little endian) of a Facebook fastText ``.bin`` model.
FASTTEXT_MAGIC = 793712314

_TEXT_EXTENSIONS = ('.txt', '.vec')
_KEYEDVECTORS_EXTENSIONS = ('.kv', '.model', '.wv')


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


def _looks_like_text_vectors(path: str) -> bool:
    """Whether the start of ``path`` is word2vec *text*: UTF-8 lines, the
    first vector line a word and numbers written out (a binary file holds
    raw float32 bytes there)."""
    with _open_maybe_compressed(path) as f:
        head = f.read(1 << 16)
    try:
        lines = head.decode('utf-8').splitlines()
    except UnicodeDecodeError:
        return False
    if len(lines) < 2:
        return False
    tokens = lines[1].split()
    try:
        return len(tokens) > 1 and all(
            isinstance(float(t), float) for t in tokens[1:])
    except ValueError:
        return False


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

    Args:
        path (str): a word-vector file.

    Returns:
        str: one of ``WORD_VECTOR_FORMATS``.
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


def _files_read(path: str, fmt: str) -> List[str]:
    """Files that loading ``path`` in format ``fmt`` reads."""
    files = [path]
    if fmt == 'keyedvectors':
        # KeyedVectors.save stores large arrays next to the pickle.
        files += sorted(glob.glob(glob.escape(path) + '.*.np[yz]'))
    return files


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
            if binary and _looks_like_text_vectors(path):
                raise ValueError(
                    f'{path!r} was given as word2vec_binary, but it is a '
                    'word2vec text file (each line a word and its numbers '
                    f'written out): name it {path}:word2vec.')
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
        print(
            f'{path}: {len(vectors.index_to_key)} words, '
            f'{vectors.vector_size} dims',
            file=sys.stderr)
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
    'fasttext':
    'a Facebook fastText model .bin (e.g. cc.en.300.bin)',
    'keyedvectors':
    'a gensim KeyedVectors.save / model save file',
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


def describe_source(vectors: KeyedVectors, path: Optional[str] = None) -> str:
    """A short description of a word-vector source for messages.

    Args:
        vectors (KeyedVectors): a loaded source.
        path (str, optional): its file.

    Returns:
        str: e.g. ``"'w2v.bin' (KeyedVectors, 300 dims)"``.
    """
    what = f'{type(vectors).__name__}, {vectors.vector_size} dims'
    return f'{path!r} ({what})' if path else f'in-memory {what}'
