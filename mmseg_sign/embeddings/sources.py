"""What the class-embedding tools read: a benchmark's class list, a class
file, a synonyms file, a source spec (``tools/build_class_embeddings.py``,
``tools/add_classes.py``, :func:`mmseg_sign.apis.add_classes`)."""
import json

from ..datasets import class_names
from .clip import CLIP_FORMAT

DATASETS = ('voc', 'context', 'context59', 'cocostuff', 'toy')


def dataset_classes(name):
    """Class names of a supported benchmark, in label order.

    Args:
        name (str): ``'voc'``, ``'context'``, ``'cocostuff'`` or ``'toy'``.

    Returns:
        list[str]: the classes.
    """
    if name == 'voc':
        return class_names.VOC20_CLASSES
    if name == 'context':
        return class_names.CONTEXT33_CLASSES
    if name == 'cocostuff':
        return class_names.COCOSTUFF171_CLASSES
    if name == 'context59':
        from mmseg.datasets import PascalContextDataset59
        return PascalContextDataset59.METAINFO['classes']
    if name == 'toy':
        return class_names.TOY_CLASSES
    raise ValueError(f'Unknown dataset {name!r}')


def read_class_file(path):
    """One class name a line; blank lines and ``#`` comments skipped.

    Args:
        path (str): the file.

    Returns:
        list[str]: the class names.
    """
    with open(path, encoding='utf-8') as f:
        names = [line.strip() for line in f]
    return [n for n in names if n and not n.startswith('#')]


SYNONYMS_EXAMPLE = ('{"pottedplant": "potted plant", '
                    '"tvmonitor": ["tv", "monitor"]}')


def read_synonyms(path, where=None):
    """Read a synonyms JSON file.

    Args:
        path (str): the file: one object mapping class names to a string
            or a list of strings.
        where (str, optional): how errors name it (default
            ``'--synonyms PATH'``).

    Returns:
        dict: class name -> word(s). A ValueError names the file and the
        fix otherwise.
    """
    where = where or f'--synonyms {path}'
    try:
        with open(path, encoding='utf-8') as f:
            synonyms = json.load(f)
    except OSError as err:
        raise ValueError(f'{where}: cannot read it ({err}).') from None
    except UnicodeDecodeError as err:
        raise ValueError(f'{where}: not UTF-8 text ({err.reason} at byte '
                         f'{err.start}); save it as UTF-8 JSON, e.g. '
                         f'{SYNONYMS_EXAMPLE}.') from None
    except json.JSONDecodeError as err:
        raise ValueError(f'{where}: not valid JSON ({err.msg} at line '
                         f'{err.lineno}, column {err.colno}); expected an '
                         f'object such as {SYNONYMS_EXAMPLE}.') from None
    if not isinstance(synonyms, dict):
        raise ValueError(f'{where}: holds a JSON {type(synonyms).__name__},'
                         ' not an object mapping class names to words, '
                         f'e.g. {SYNONYMS_EXAMPLE}.')
    for name, words in synonyms.items():
        ok = isinstance(words, str) and words.strip() or (
            isinstance(words, list) and words
            and all(isinstance(w, str) and w.strip() for w in words))
        if not ok:
            raise ValueError(
                f'{where}: the words of {name!r} must be a non-empty string '
                f'or a list of non-empty strings, got {words!r}; e.g. '
                f'{SYNONYMS_EXAMPLE}.')
    return synonyms


def parse_source(spec):
    """``PATH[:FORMAT]`` or ``clip:PATH`` -> ``dict(path=..., format=...)``.

    Args:
        spec (str): e.g. ``'GoogleNews.bin:word2vec_binary'``.

    Returns:
        dict: ``path`` and ``format``.
    """
    from .loader import WORD_VECTOR_FORMATS  # the formats gensim reads
    prefix, sep, rest = spec.partition(':')
    if sep and prefix.lower() == CLIP_FORMAT and rest:
        return dict(path=rest, format=CLIP_FORMAT)
    path, sep, fmt = spec.rpartition(':')
    if sep and fmt.lower() in WORD_VECTOR_FORMATS + (CLIP_FORMAT, 'auto'):
        return dict(path=path, format=fmt.lower())
    return dict(path=spec, format='auto')
