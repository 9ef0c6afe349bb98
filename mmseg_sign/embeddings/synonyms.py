# Copyright (c) OpenMMLab. All rights reserved.
"""Map dataset class names to the words looked up in word vectors.

A class name is turned into words in three steps:

1. If the name (or its lowercase form) is in the synonym map, its value
   replaces the name. A value is a string (split like a name) or a list of
   words.
2. Otherwise the COCO-Stuff catch-all suffixes ``-other``, ``-merged`` and
   ``-stuff`` are stripped (``'sky-other-merged'`` -> ``'sky'``,
   ``'desk-stuff'`` -> ``'desk'``): they name an annotation bucket, not a
   thing, and would pull every such class towards the vector of "other".
3. The text is split on spaces, hyphens and underscores
   (``'wall-concrete'`` -> ``['wall', 'concrete']``). The class vector is
   the mean of the word vectors (CaGNet's released tables,
   docs/reproduction.md).
"""
import re
from typing import Dict, List, Mapping, Optional, Sequence, Union

SynonymValue = Union[str, Sequence[str]]

#: Names in the VOC-20, Pascal-Context-33/59 and COCO-Stuff-171 lists that
#: are not plain words of word2vec / fastText vocabularies. Everything else
#: in those lists is either a word, words separated by spaces or hyphens
#: (``'traffic light'``, ``'wall-concrete'``, ``'window-blind'``), or ends
#: in a suffix stripped by :data:`STRIP_SUFFIXES`.
DEFAULT_SYNONYMS: Dict[str, SynonymValue] = {
    # Pascal VOC / Pascal Context (33 and 59 classes)
    'diningtable': 'dining table',
    'pottedplant': 'potted plant',
    'tvmonitor': 'tv monitor',
    # Context-59; a real but rare word, missing from many vocabularies
    'bedclothes': 'bed clothes',
    # COCO-Stuff 171
    'playingfield': 'playing field',
    'waterdrops': 'water drops',
}

#: Catch-all suffixes of COCO-Stuff (``-other``, ``-stuff``) and of COCO
#: panoptic (``-merged``) names, stripped repeatedly from the end.
STRIP_SUFFIXES = ('-merged', '-other', '-stuff')

_SPLIT_PATTERN = re.compile(r'[\s\-_]+')


def merge_synonyms(synonyms: Optional[Mapping[str, SynonymValue]] = None,
                   use_default: bool = True) -> Dict[str, SynonymValue]:
    """Return the default synonym map updated with ``synonyms``.

    Entries of ``synonyms`` override the defaults. With
    ``use_default=False`` only ``synonyms`` is used.

    Args:
        synonyms (Mapping, optional): ``{class: words}``.
        use_default (bool): start from the default map.

    Returns:
        dict: the merged map.
    """
    merged: Dict[str, SynonymValue] = (
        dict(DEFAULT_SYNONYMS) if use_default else {})
    if synonyms:
        if not isinstance(synonyms, Mapping):
            raise TypeError('synonyms must be a dict mapping class names to '
                            f'words, got {type(synonyms).__name__}')
        merged.update(synonyms)
    return merged


def strip_suffixes(name: str, suffixes: Sequence[str] = STRIP_SUFFIXES) -> str:
    """Strip catch-all suffixes (``'-other'``, ...) from the end of a name.

    Args:
        name (str): a class name.
        suffixes (Sequence[str]): the suffixes.

    Returns:
        str: the name without them.
    """
    stripped = True
    while stripped:
        stripped = False
        for suffix in suffixes:
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[:-len(suffix)]
                stripped = True
    return name


def class_name_to_words(name: str,
                        synonyms: Optional[Mapping[str, SynonymValue]] = None,
                        use_default: bool = True) -> List[str]:
    """Return the words whose vectors are averaged for class ``name``.

    Args:
        name (str): Class name, e.g. ``'pottedplant'`` or
            ``'wall-concrete'``.
        synonyms (dict, optional): Class name -> replacement text or list of
            words. Overrides :data:`DEFAULT_SYNONYMS`.
        use_default (bool): Whether to start from
            :data:`DEFAULT_SYNONYMS`. Defaults to True.

    Returns:
        list[str]: The words, in order, e.g. ``['potted', 'plant']``.
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f'Class name must be a non-empty string, got '
                         f'{name!r}')
    mapping = merge_synonyms(synonyms, use_default)
    key = name if name in mapping else name.lower()
    if key in mapping:
        value = mapping[key]
        pieces = [value] if isinstance(value, str) else list(value)
    else:
        pieces = [strip_suffixes(name.strip())]
    words = []
    for piece in pieces:
        if not isinstance(piece, str):
            raise TypeError(f'Synonym of class {name!r} must be a string or '
                            f'a list of strings, got {mapping[key]!r}')
        words.extend(w for w in _SPLIT_PATTERN.split(piece) if w)
    if not words:
        raise ValueError(f'Class {name!r} maps to no words (synonym '
                         f'{mapping.get(key)!r}); give it a non-empty '
                         'synonym.')
    return words
