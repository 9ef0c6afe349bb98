# Copyright (c) OpenMMLab. All rights reserved.
"""Class-embedding tables: save, read and check them (:mod:`.table`, numpy
only: all a trained model needs), and build them from word vectors
(:mod:`.builder`, :mod:`.loader`: gensim) or the text tower of a local CLIP
checkpoint (:mod:`.clip`).

The gensim parts are imported when first used, so that ``import
mmseg_sign`` (inference, ONNX export) works without gensim installed.
"""
import importlib

from .cagnet import (CAGNET_ALIASES, CAGNET_DATASETS, CAGNET_LABELS,
                     UnsafePickleError, cagnet_class_embeddings,
                     cagnet_split_classes, load_numpy_pickle,
                     read_cagnet_labels)
from .clip import (CLIP_FORMAT, DEFAULT_CLIP_TEMPLATES, CLIPTextEncoder,
                   check_templates, clip_class_text, clip_text_embeddings,
                   load_clip_text_encoder, read_templates)
from .synonyms import (DEFAULT_SYNONYMS, STRIP_SUFFIXES, class_name_to_words,
                       merge_synonyms, strip_suffixes)
from .table import (load_class_embeddings, read_class_embeddings,
                    save_class_embeddings)

#: names of the gensim parts, by module (imported on first use)
_GENSIM_PARTS = dict(
    builder=('MissingWordError', 'build_class_embeddings'),
    loader=('WORD_VECTOR_FORMATS', 'guess_format', 'load_keyedvectors',
            'load_word_vectors'),
    progress=('ReadProgress', ))


def __getattr__(name: str):
    for module, names in _GENSIM_PARTS.items():
        if name in names:
            return getattr(
                importlib.import_module(f'.{module}', __name__), name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


__all__ = [
    'build_class_embeddings', 'save_class_embeddings', 'load_class_embeddings',
    'read_class_embeddings', 'load_word_vectors', 'load_keyedvectors',
    'guess_format', 'class_name_to_words', 'merge_synonyms', 'strip_suffixes',
    'DEFAULT_SYNONYMS', 'STRIP_SUFFIXES', 'WORD_VECTOR_FORMATS',
    'MissingWordError', 'ReadProgress', 'cagnet_class_embeddings',
    'cagnet_split_classes', 'load_numpy_pickle', 'read_cagnet_labels',
    'UnsafePickleError', 'CAGNET_LABELS', 'CAGNET_ALIASES', 'CAGNET_DATASETS',
    'CLIPTextEncoder', 'load_clip_text_encoder', 'clip_text_embeddings',
    'clip_class_text', 'check_templates', 'read_templates', 'CLIP_FORMAT',
    'DEFAULT_CLIP_TEMPLATES'
]
