# Copyright (c) OpenMMLab. All rights reserved.
"""Load word vectors with gensim (word2vec text / binary, fastText, KV)."""
import bz2
import glob
import gzip
import os
import os.path as osp
import struct
import sys
import threading
import time
from typing import Iterable, List, Optional

from gensim.models import KeyedVectors

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
      ``KeyedVectors.save`` or a saved gensim model).

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
        files += sorted(glob.glob(glob.escape(path) + '.*.npy'))
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
            ``'keyedvectors'`` (``KeyedVectors.load``) or ``'auto'``
            (see :func:`guess_format`). Defaults to ``'auto'``.
        show_progress (bool): Print read progress to stderr. Defaults to
            True.
        **kwargs: Passed to the gensim loader, e.g. ``limit=500000`` or
            ``unicode_errors='ignore'`` for word2vec files.

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
        loaded = KeyedVectors.load(path, **kwargs)
        # A saved full model (Word2Vec / FastText) keeps its vectors in .wv
        return getattr(loaded, 'wv', loaded)

    if not show_progress:
        vectors = _load()
    else:
        files = _files_read(path, fmt)
        size = _format_bytes(sum(osp.getsize(f) for f in files))
        print(f'Loading {fmt} vectors from {path} ({size})', file=sys.stderr)
        with ReadProgress(files, osp.basename(path)):
            vectors = _load()
        print(f'{path}: {len(vectors.index_to_key)} words, '
              f'{vectors.vector_size} dims', file=sys.stderr)
    if not isinstance(vectors, KeyedVectors):
        raise TypeError(f'{path!r} loaded as {type(vectors).__name__}, not '
                        'gensim KeyedVectors; check the format.')
    return vectors


def describe_source(vectors: KeyedVectors,
                    path: Optional[str] = None) -> str:
    """A short description of a word-vector source for messages."""
    what = f'{type(vectors).__name__}, {vectors.vector_size} dims'
    return f'{path!r} ({what})' if path else f'in-memory {what}'
