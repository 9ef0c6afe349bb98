# Copyright (c) OpenMMLab. All rights reserved.
"""Build class-embedding tables from word vectors or a CLIP text tower
(saved and read by :mod:`.table`).

A table has one row per class: for every word-vector source the mean of the
vectors of the class's words, L2-normalised; the sources concatenated in order
(word2vec 300 ‖ fastText 300 = 600 dims by default); and the whole row
L2-normalised (CaGNet's released tables, docs/reproduction.md). A source may
also be the text tower of a local CLIP checkpoint (``dict(path=...,
format='clip')``, see :mod:`.clip`): its part is the template-averaged CLIP
embedding of the class's words, L2-normalised like any other part.
"""
import os
from typing import Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from gensim.models import KeyedVectors
from gensim.models.fasttext import FastTextKeyedVectors

from .clip import CLIP_FORMAT, CLIPTextEncoder, clip_text_embeddings
from .loader import describe_source, load_word_vectors
from .synonyms import SynonymValue, class_name_to_words, merge_synonyms
from .table import _check_class_names, _check_distinct_rows, duplicate_rows

Source = Union[KeyedVectors, CLIPTextEncoder, Mapping[str, Any], str,
               os.PathLike]


class MissingWordError(KeyError):
    """A class word is not in a word-vector vocabulary."""

    def __str__(self) -> str:
        # KeyError quotes its message; show it as written.
        return str(self.args[0]) if self.args else ''


def _resolve_source(source: Source, index: int,
                    show_progress: bool) -> Tuple[KeyedVectors, str]:
    """Turn a source spec into ``(KeyedVectors, description)``."""
    if isinstance(source, KeyedVectors):
        return source, f'#{index} {describe_source(source)}'
    if hasattr(source, 'wv') and isinstance(source.wv, KeyedVectors):
        return source.wv, f'#{index} {describe_source(source.wv)}'
    if isinstance(source, (str, os.PathLike)):
        vectors = load_word_vectors(source, 'auto', show_progress)
        return vectors, f'#{index} {describe_source(vectors, source)}'
    if isinstance(source, Mapping):
        spec = dict(source)
        if 'path' not in spec:
            raise ValueError(f'Source #{index} {source!r} has no "path"')
        path = spec.pop('path')
        fmt = spec.pop('format', spec.pop('fmt', 'auto'))
        spec.setdefault('show_progress', show_progress)
        vectors = load_word_vectors(path, fmt, **spec)
        return vectors, f'#{index} {describe_source(vectors, path)}'
    raise TypeError(f'Source #{index} must be a gensim KeyedVectors, a '
                    f'path, a dict(path=..., format=...) or a '
                    f'CLIPTextEncoder, got {type(source).__name__}')


def _is_clip_source(source: Source) -> bool:
    """Whether a source is a CLIP text tower (an encoder or a dict with
    ``format='clip'``)."""
    if isinstance(source, CLIPTextEncoder):
        return True
    if isinstance(source, Mapping):
        fmt = source.get('format', source.get('fmt'))
        return isinstance(fmt, str) and fmt.lower() == CLIP_FORMAT
    return False


def _clip_source_table(source: Source, index: int,
                       class_words: List[Tuple[str, List[str]]]) -> np.ndarray:
    """Per-source table of a CLIP source: ``[K, D]``, unit rows.

    The text of a class is its words (synonyms applied) joined by spaces,
    e.g. ``'pottedplant'`` -> ``'potted plant'``. A dict source takes
    ``path`` and optionally ``templates``, ``device`` and ``batch_size``.
    """
    templates, batch_size = None, 256
    if isinstance(source, CLIPTextEncoder):
        encoder = source
    else:
        spec = dict(source)
        if 'path' not in spec:
            raise ValueError(f'Source #{index} {source!r} has no "path"')
        path = spec.pop('path')
        spec.pop('format', None)
        spec.pop('fmt', None)
        spec.pop('show_progress', None)
        templates = spec.pop('templates', None)
        batch_size = spec.pop('batch_size', batch_size)
        device = spec.pop('device', 'cpu')
        if spec:
            raise TypeError(f'Source #{index}: unknown CLIP source options '
                            f'{sorted(spec)} (known: path, format, '
                            'templates, device, batch_size)')
        encoder = CLIPTextEncoder(path, device)
    texts = [' '.join(words) for _, words in class_words]
    return clip_text_embeddings(texts, encoder, templates, batch_size)


def _lookup(vectors: KeyedVectors, word: str,
            fasttext_oov: bool) -> Optional[np.ndarray]:
    """The vector of ``word`` (as written, then lowercase), or None.

    With ``fasttext_oov`` a fastText model builds vectors of unknown words
    from character n-grams.
    """
    for candidate in dict.fromkeys((word, word.lower())):
        if candidate in vectors.key_to_index:
            return vectors.get_vector(candidate)
    if fasttext_oov and isinstance(vectors, FastTextKeyedVectors) \
            and vectors.bucket > 0:
        try:
            return vectors.get_vector(word.lower())
        except KeyError:
            return None
    return None


def _source_table(vectors: KeyedVectors, description: str,
                  class_words: List[Tuple[str, List[str]]],
                  fasttext_oov: bool) -> np.ndarray:
    """Per-source table: mean of word vectors, L2-normalised per class."""
    table = np.zeros((len(class_words), vectors.vector_size), np.float64)
    missing = []
    for idx, (name, words) in enumerate(class_words):
        found = []
        for word in words:
            vec = _lookup(vectors, word, fasttext_oov)
            if vec is None:
                missing.append((idx, name, word, words))
            else:
                found.append(np.asarray(vec, np.float64))
        if len(found) != len(words):
            continue
        mean = np.mean(found, axis=0)
        norm = np.linalg.norm(mean)
        if not np.isfinite(norm) or norm == 0:
            raise ValueError(
                f'Class {name!r} (index {idx}) has a zero or non-finite '
                f'mean vector {words} in source {description}; give it '
                'another synonym.')
        table[idx] = mean / norm
    if missing:
        lines = [
            f'  class {name!r} (index {idx}): word {word!r} (words '
            f'{words}; tried as written and lowercase)'
            for idx, name, word, words in missing
        ]
        first = missing[0][1]
        raise MissingWordError(
            f'{len(missing)} word(s) missing from word-vector source '
            f'{description}:\n' + '\n'.join(lines) + '\nAdd a synonym that '
            f"maps each class to known words, e.g. synonyms={{'{first}': "
            f"'some words'}} (a JSON file for "
            'tools/build_class_embeddings.py --synonyms).')
    return table


def build_class_embeddings(class_names: Sequence[str],
                           sources: Sequence[Source],
                           synonyms: Optional[Mapping[str,
                                                      SynonymValue]] = None,
                           normalize: bool = True,
                           use_default_synonyms: bool = True,
                           fasttext_oov: bool = False,
                           show_progress: bool = True) -> np.ndarray:
    """Build a class-embedding table from word vectors and / or CLIP.

    Args:
        class_names (Sequence[str]): Class names, in label order.
        sources (Sequence): Sources, concatenated in this order. Each is a
            gensim ``KeyedVectors`` (or a model with ``.wv``), a path
            (format guessed) or ``dict(path=..., format=...)`` plus
            keyword arguments of :func:`load_word_vectors`; or a CLIP text
            tower: ``dict(path=CHECKPOINT_DIR, format='clip')`` (optional
            ``templates``, ``device``, ``batch_size``) or a
            :class:`CLIPTextEncoder`.
        synonyms (dict, optional): Class name -> words; overrides
            :data:`DEFAULT_SYNONYMS`.
        normalize (bool): L2-normalise each concatenated row. Every source
            part is L2-normalised regardless. Defaults to True.
        use_default_synonyms (bool): Start from :data:`DEFAULT_SYNONYMS`.
            Defaults to True.
        fasttext_oov (bool): Let fastText ``.bin`` sources build vectors of
            out-of-vocabulary words from subwords instead of failing.
            Defaults to False.
        show_progress (bool): Progress while loading sources given as
            paths. Defaults to True.

    Returns:
        np.ndarray: float32 ``[K, sum of source dims]``.
    """
    names = _check_class_names(class_names)
    if isinstance(sources,
                  (KeyedVectors, CLIPTextEncoder, str, os.PathLike, Mapping)):
        sources = [sources]
    if not sources:
        raise ValueError('At least one embedding source is needed')
    mapping = merge_synonyms(synonyms, use_default_synonyms)
    class_words = [(name, class_name_to_words(name, mapping, False))
                   for name in names]
    parts = []
    for index, source in enumerate(sources):
        if _is_clip_source(source):
            parts.append(_clip_source_table(source, index, class_words))
            continue
        vectors, description = _resolve_source(source, index, show_progress)
        parts.append(
            _source_table(vectors, description, class_words, fasttext_oov))
    table = np.concatenate(parts, axis=1)
    if normalize:
        table /= np.linalg.norm(table, axis=1, keepdims=True)
    same = {k for pair in duplicate_rows(table)[:5] for k in pair}
    _check_distinct_rows(
        names, table, 'build_class_embeddings', 'They are looked up as ' +
        ', '.join(f'{names[k]!r} -> {" ".join(class_words[k][1])!r}'
                  for k in sorted(same)) +
        '; give one of each pair words of its '
        "own with a synonym, e.g. synonyms={'tvmonitor': 'tv monitor'} (a "
        'JSON file for tools/build_class_embeddings.py --synonyms).')
    return table.astype(np.float32)
