"""A restricted unpickler: only allow-listed globals, nothing else runs.

``pickle.load`` calls whatever global a file names (``os.system``,
``eval``, ...). :class:`RestrictedUnpickler` resolves globals through an
explicit ``(module, name) -> object`` allow-list and refuses everything else
with :class:`UnsafePickleError` *before* anything is called. It is the one
home of the project's safe pickle reading: CaGNet's ``.pkl`` word vectors
(numpy arrays, :func:`numpy_array_globals`) and gensim ``KeyedVectors``
files (``mmseg_sign.embeddings.loader``) use it.
"""
import pickle
from typing import Any, Dict, Mapping, Tuple

import numpy as np

Globals = Dict[Tuple[str, str], Any]


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle asks for a global that is not on the allow-list."""


def _latin1_encode(text, encoding='latin1'):
    """``_codecs.encode`` as protocol-2 pickles use it for bytes."""
    if not isinstance(text, str) or encoding not in ('latin1', 'latin-1'):
        raise pickle.UnpicklingError(
            f'unexpected _codecs.encode({type(text).__name__}, '
            f'{encoding!r}) in a pickle')
    return text.encode('latin1')


def _numpy_core():
    try:
        from numpy._core import multiarray, numeric  # numpy >= 2
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray, numeric
    return multiarray, numeric


def numpy_array_globals(scalars: bool = False) -> Globals:
    """``(module, name) -> object``: all that numpy array pickles use.

    Args:
        scalars (bool): Also allow numpy scalars (``multiarray.scalar``,
            e.g. ``np.float32(1)``). Defaults to False.
    """
    multiarray, numeric = _numpy_core()
    allowed = {
        ('numpy', 'ndarray'): np.ndarray,
        ('numpy', 'dtype'): np.dtype,
        ('_codecs', 'encode'): _latin1_encode,  # protocol <= 2
    }
    # Pickles name numpy's core module as written by numpy 1.x or 2.x.
    for core in ('numpy.core', 'numpy._core'):
        allowed[(f'{core}.multiarray', '_reconstruct')] = \
            multiarray._reconstruct
        allowed[(f'{core}.numeric', '_frombuffer')] = \
            numeric._frombuffer  # protocol 5
        if scalars:
            allowed[(f'{core}.multiarray', 'scalar')] = multiarray.scalar
    return allowed


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves globals only through ``allowed``.

    Args:
        file: Binary file object to read.
        path (str): The file's name, for messages.
        allowed (Mapping): ``(module, name) -> object``. Names are matched
            as written in the pickle (protocol <= 2 writes Python 2's
            ``__builtin__`` / ``copy_reg``: list both spellings where
            needed).
        refusal (str): Why other globals are refused, appended to
            ``'refusing to load MODULE.NAME from PATH: '``.
    """

    def __init__(self, file, path: str, allowed: Mapping[Tuple[str, str], Any],
                 refusal: str):
        # latin1 reads Python 2 pickles of numpy arrays.
        super().__init__(file, encoding='latin1')
        self._path = path
        self._allowed = dict(allowed)
        self._refusal = refusal

    def find_class(self, module, name):
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise UnsafePickleError(
                f'refusing to load {module}.{name} from {self._path}: '
                f'{self._refusal}') from None

    def persistent_load(self, pid):
        raise UnsafePickleError(
            f'refusing to load a persistent id from {self._path}: '
            f'{self._refusal}')
