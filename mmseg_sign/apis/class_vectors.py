"""The new classes' embeddings for :func:`~mmseg_sign.apis.add_classes`:
given, or built from word-vector sources like the model's table."""
import os
import pickle
from collections.abc import Mapping

import numpy as np

from .. import embeddings  # its builder needs gensim: looked up at use
from ..embeddings.sources import read_synonyms
from ..embeddings.table import read_class_embeddings
from .outputs import AddClassesError


def _read_synonyms(synonyms):
    """A synonym mapping, or the one in a JSON file."""
    if synonyms is None or isinstance(synonyms, Mapping):
        return synonyms
    try:
        return read_synonyms(synonyms, where=f'synonyms file {synonyms}')
    except ValueError as err:
        raise AddClassesError(str(err)) from None


def new_class_vectors(names,
                      vectors=None,
                      source=None,
                      synonyms=None,
                      normalize=True,
                      use_default_synonyms=True,
                      fasttext_oov=False) -> np.ndarray:
    """``[n, D]`` embeddings of ``names``: ``vectors`` (an array, or a
    class-embedding table ``.npz`` holding the names) or built from
    ``source`` (word-vector sources as for
    :func:`~mmseg_sign.embeddings.build_class_embeddings`).

    Args:
        names (Sequence[str]): the new classes.
        vectors (np.ndarray | str, optional): their vectors or a table.
        source: word-vector sources instead of ``vectors``.
        synonyms, normalize, use_default_synonyms, fasttext_oov: as
            ``build_class_embeddings``'.

    Returns:
        np.ndarray: ``[n, D]`` float32.

    Raises:
        AddClassesError: a missing name, word or file, named.
    """
    if (vectors is None) == (source is None):
        raise AddClassesError('give exactly one of `vectors` (an array or a '
                              'table .npz holding the new names) and '
                              '`source` (word-vector sources).')
    try:
        if isinstance(vectors, (str, os.PathLike)):
            table_names, table = read_class_embeddings(vectors)
            index = {n.strip(): i for i, n in enumerate(table_names)}
            missing = [n for n in names if n.strip() not in index]
            if missing:
                raise AddClassesError(
                    f'{vectors} has no rows for {missing}; it holds '
                    f'{", ".join(table_names)}.')
            return table[[index[n.strip()] for n in names]]
        if vectors is not None:
            return np.asarray(vectors, dtype=np.float32)
        return embeddings.build_class_embeddings(
            names,
            source,
            synonyms=_read_synonyms(synonyms),
            normalize=normalize,
            use_default_synonyms=use_default_synonyms,
            fasttext_oov=fasttext_oov)
    except AddClassesError:
        raise
    except (KeyError, ValueError, OSError, pickle.UnpicklingError) as err:
        raise AddClassesError(str(err)) from err
