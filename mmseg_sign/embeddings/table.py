# Copyright (c) OpenMMLab. All rights reserved.
"""Class-embedding tables on disk (``.npz`` with ``classes`` and
``embeddings``): save, read, check. numpy only: what a trained model needs
at inference (building a table from word vectors is :mod:`.builder`'s, and
needs gensim).
"""
import os
import os.path as osp
import zipfile
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from ..utils.atomic import atomic_write

_BUILD_HINT = ('Rebuild the table for this class list with '
               '`python tools/build_class_embeddings.py --dataset ... '
               '(or --classes FILE) --source PATH[:FORMAT] ... --out PATH` '
               '(or, for the published CaGNet / SIGN vectors, '
               '`python tools/dataset_converters/cagnet_word_vectors.py`).')


def _check_class_names(class_names: Sequence[str]) -> List[str]:
    """Return the names as a list; reject empty, non-str and duplicates."""
    if isinstance(class_names, str):
        raise TypeError('class_names must be a sequence of names, not a '
                        'single string')
    names = list(class_names)
    if not names:
        raise ValueError('class_names is empty')
    seen = {}
    for idx, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise ValueError(f'Class {idx} has an invalid name {name!r}')
        if name in seen:
            raise ValueError(f'Class name {name!r} appears twice (indices '
                             f'{seen[name]} and {idx})')
        seen[name] = idx
    return names


def duplicate_rows(table: np.ndarray, rtol: float = 1e-5) -> list:
    """Pairs ``(i, j)``, ``i < j``, of rows of ``table`` that are the same
    vector (``‖t_i - t_j‖ <= rtol · max(‖t_i‖, ‖t_j‖)``): two classes the
    head could not tell apart (G would generate the same features for
    both, and C could not learn an unseen one of them).

    Args:
        table (np.ndarray): ``[K, D]``.
        rtol (float): the relative tolerance.

    Returns:
        list[tuple[int, int]]: the pairs.
    """
    table = np.asarray(table, dtype=np.float64)
    norms = np.linalg.norm(table, axis=1)
    sq = norms**2
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2 * table @ table.T, 0)
    limit = (rtol * np.maximum(norms[:, None], norms[None, :]))**2
    # exact equality too (the Gram form loses precision for large rows)
    close = dist2 <= limit
    i, j = np.nonzero(np.triu(close, k=1))
    return [(int(a), int(b)) for a, b in zip(i, j) if np.allclose(
        table[a], table[b], rtol=rtol, atol=rtol * max(norms[a], norms[b]))]


def _check_distinct_rows(names: Sequence[str], table: np.ndarray, where: str,
                         fix: str) -> None:
    """ValueError naming the classes with the same vector (see
    :func:`duplicate_rows`)."""
    pairs = duplicate_rows(table)
    if not pairs:
        return
    shown = ', '.join(f'{names[i]!r} (row {i}) = {names[j]!r} (row {j})'
                      for i, j in pairs[:5])
    more = f' and {len(pairs) - 5} more' if len(pairs) > 5 else ''
    raise ValueError(
        f'{where}: {len(pairs)} pair(s) of classes have the same embedding '
        f'vector: {shown}{more}. The model cannot tell such classes apart '
        f'(the generator makes the same features for both). {fix}')


def save_class_embeddings(path: Union[str,
                                      os.PathLike], class_names: Sequence[str],
                          vectors: np.ndarray) -> str:
    """Write a table to one ``.npz`` with ``classes`` and ``embeddings``.

    The archive has fixed timestamps, so equal tables give equal bytes.
    The file is written atomically (temporary file + rename).

    Args:
        path (str): the ``.npz`` to write.
        class_names (Sequence[str]): the classes, in label order.
        vectors (np.ndarray): ``[K, D]``.

    Returns:
        str: ``path``.

    Returns:
        str: The path written.
    """
    path = os.fspath(path)
    names = _check_class_names(class_names)
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(names):
        raise ValueError(f'vectors must have shape [{len(names)}, D] for '
                         f'{len(names)} classes, got {vectors.shape}')
    if not np.isfinite(vectors).all():
        raise ValueError('vectors contain NaN or inf')
    arrays = (('classes', np.array(names, dtype=np.str_)),
              ('embeddings', np.ascontiguousarray(vectors)))

    def write(tmp):
        with zipfile.ZipFile(tmp, 'w', zipfile.ZIP_STORED) as archive:
            for key, array in arrays:
                info = zipfile.ZipInfo(f'{key}.npy', (1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                with archive.open(info, 'w', force_zip64=True) as member:
                    np.lib.format.write_array(
                        member, array, allow_pickle=False)

    atomic_write(path, write)
    return path


def _describe_name_mismatch(stored: List[str], expected: List[str]) -> str:
    """Explain how two class lists differ."""
    missing = [n for n in expected if n not in set(stored)]
    extra = [n for n in stored if n not in set(expected)]
    details = []
    if missing:
        details.append(f'missing from the file: {missing}')
    if extra:
        details.append(f'not in the dataset: {extra}')
    if not missing and not extra:
        for idx, (got, want) in enumerate(zip(stored, expected)):
            if got != want:
                details.append(
                    f'same names in a different order; first mismatch at '
                    f'index {idx}: file has {got!r}, dataset has {want!r}')
                break
    return '; '.join(details)


_ZIP_MAGIC = (b'PK\x03\x04', b'PK\x05\x06')  # a member / an empty archive
_NPY_MAGIC = b'\x93NUMPY'


def read_class_embeddings(
        path: Union[str, os.PathLike, None]) -> Tuple[List[str], np.ndarray]:
    """Read and validate a class-embedding table file: the one reader.

    Every problem (no path, missing file, not an ``.npz``, empty or
    truncated file, missing keys, pickled object arrays, wrong shapes,
    NaN / inf or all-zero rows) raises ``FileNotFoundError`` or
    ``ValueError`` with a message naming the file and how to rebuild it;
    nothing is unpickled (``allow_pickle=False``).

    Args:
        path (str): ``.npz`` written by :func:`save_class_embeddings`.

    Returns:
        tuple[list[str], np.ndarray]: The class names stored in the file
        and the float32 ``[K, D]`` table.
    """
    if path is None:
        raise ValueError('No class-embedding file given (the path is None); '
                         'set it to an .npz with "classes" and '
                         f'"embeddings". {_BUILD_HINT}')
    try:
        path = os.fspath(path)
    except TypeError:
        raise ValueError(
            f'The class-embedding file must be a path, got {path!r}. '
            f'{_BUILD_HINT}') from None
    if not osp.isfile(path):
        what = 'is a directory, not a file' if osp.isdir(path) else \
            'not found'
        raise FileNotFoundError(
            f'Class-embedding file {what}: {path!r}. {_BUILD_HINT}')
    try:
        with open(path, 'rb') as f:
            head = f.read(6)
    except OSError as err:  # e.g. no read permission
        raise ValueError(f'Cannot read the class-embedding file {path!r} '
                         f'({err}). {_BUILD_HINT}') from None
    if head.startswith(_NPY_MAGIC):
        raise ValueError(f'{path!r} is a single array (.npy), not an .npz '
                         f'with "classes" and "embeddings". {_BUILD_HINT}')
    if not head.startswith(_ZIP_MAGIC):
        what = 'is empty' if not head else 'is not a zip archive'
        raise ValueError(f'Cannot read {path!r} as a class-embedding .npz: '
                         f'the file {what}. {_BUILD_HINT}')
    try:
        # members are read inside: a truncated archive may fail only here
        with np.load(path, allow_pickle=False) as data:
            files = list(data.files)
            arrays = {
                k: data[k]
                for k in ('classes', 'embeddings') if k in files
            }
    except ValueError as err:
        reason = str(err)
        if 'allow_pickle' in reason:  # numpy would advise the unsafe fix
            reason = ('it holds pickled Python objects (an object array), '
                      'which are never loaded: they could run code')
        raise ValueError(f'Cannot read {path!r} as a class-embedding .npz '
                         f'({reason}). {_BUILD_HINT}') from None
    except Exception as err:  # truncated / damaged: zip, zlib, EOF errors
        raise ValueError(
            f'Cannot read {path!r} as a class-embedding .npz, it is '
            f'truncated or damaged ({type(err).__name__}: {err}). '
            f'{_BUILD_HINT}') from None
    missing_keys = [k for k in ('classes', 'embeddings') if k not in arrays]
    if missing_keys:
        raise ValueError(
            f'{path!r} lacks the key(s) {missing_keys} (it holds {files}; '
            f'it must hold "classes" and "embeddings"). {_BUILD_HINT}')
    stored, table = arrays['classes'], arrays['embeddings']

    if stored.ndim != 1 or stored.dtype.kind != 'U':
        raise ValueError(f'{path!r}: "classes" must be a 1-D string array, '
                         f'got {stored.dtype} {stored.shape}. {_BUILD_HINT}')
    stored = [str(n) for n in stored]
    if table.ndim != 2:
        raise ValueError(f'{path!r}: "embeddings" must be 2-D [K, D], got '
                         f'shape {table.shape}. {_BUILD_HINT}')
    if table.dtype.kind not in 'fiu':
        raise ValueError(f'{path!r}: "embeddings" must be numeric, got '
                         f'{table.dtype}. {_BUILD_HINT}')
    if table.shape[0] != len(stored):
        raise ValueError(f'{path!r}: {table.shape[0]} embedding rows but '
                         f'{len(stored)} class names. {_BUILD_HINT}')
    table = table.astype(np.float32)
    bad_rows = np.flatnonzero(~np.isfinite(table).all(axis=1))
    if bad_rows.size:
        idx = int(bad_rows[0])
        raise ValueError(
            f'{path!r}: non-finite values (NaN/inf) in {bad_rows.size} '
            f'row(s), first at index {idx} (class {stored[idx]!r}). '
            f'{_BUILD_HINT}')
    zero_rows = np.flatnonzero(~table.any(axis=1))
    if zero_rows.size:
        idx = int(zero_rows[0])
        raise ValueError(
            f'{path!r}: all-zero embedding in {zero_rows.size} row(s), '
            f'first at index {idx} (class {stored[idx]!r}). {_BUILD_HINT}')
    twice = sorted({n for n in stored if stored.count(n) > 1})
    if twice:
        raise ValueError(f'{path!r}: the class name(s) {twice} appear more '
                         f'than once in "classes". {_BUILD_HINT}')
    _check_distinct_rows(stored, table, repr(path), _BUILD_HINT)
    return stored, table


def load_class_embeddings(
        path: Union[str, os.PathLike],
        class_names: Optional[Sequence[str]] = None) -> np.ndarray:
    """Load and validate a class-embedding table.

    Args:
        path (str): ``.npz`` written by :func:`save_class_embeddings`
            (read by :func:`read_class_embeddings`).
        class_names (Sequence[str], optional): The dataset's classes; when
            given, the file must hold the same names in the same order.

    Returns:
        np.ndarray: float32 ``[K, D]``.
    """
    stored, table = read_class_embeddings(path)
    if class_names is not None:
        expected = list(class_names)
        if stored != expected:
            count = ''
            if len(stored) != len(expected):
                count = (f'the file has {len(stored)} classes, the dataset '
                         f'{len(expected)}; ')
            raise ValueError(
                f'{os.fspath(path)!r} does not match the dataset classes: '
                f'{count}{_describe_name_mismatch(stored, expected)}. '
                f'{_BUILD_HINT}')
    return table
