# Copyright (c) OpenMMLab. All rights reserved.
"""Class-embedding tables: build them from word vectors (or the text tower
of a local CLIP checkpoint), save, load."""
from .builder import (MissingWordError, build_class_embeddings,
                      load_class_embeddings, read_class_embeddings,
                      save_class_embeddings)
from .cagnet import (CAGNET_ALIASES, CAGNET_DATASETS, CAGNET_LABELS,
                     UnsafePickleError, cagnet_class_embeddings,
                     cagnet_split_classes, load_numpy_pickle,
                     read_cagnet_labels)
from .clip import (CLIP_FORMAT, DEFAULT_CLIP_TEMPLATES, CLIPTextEncoder,
                   check_templates, clip_class_text, clip_text_embeddings,
                   load_clip_text_encoder, read_templates)
from .loader import (WORD_VECTOR_FORMATS, ReadProgress, guess_format,
                     load_keyedvectors, load_word_vectors)
from .synonyms import (DEFAULT_SYNONYMS, STRIP_SUFFIXES, class_name_to_words,
                       merge_synonyms, strip_suffixes)

__all__ = [
    'build_class_embeddings', 'save_class_embeddings',
    'load_class_embeddings', 'read_class_embeddings', 'load_word_vectors',
    'load_keyedvectors', 'guess_format',
    'class_name_to_words', 'merge_synonyms', 'strip_suffixes',
    'DEFAULT_SYNONYMS', 'STRIP_SUFFIXES', 'WORD_VECTOR_FORMATS',
    'MissingWordError', 'ReadProgress', 'cagnet_class_embeddings',
    'cagnet_split_classes', 'load_numpy_pickle', 'read_cagnet_labels',
    'UnsafePickleError', 'CAGNET_LABELS', 'CAGNET_ALIASES', 'CAGNET_DATASETS',
    'CLIPTextEncoder', 'load_clip_text_encoder', 'clip_text_embeddings',
    'clip_class_text', 'check_templates', 'read_templates', 'CLIP_FORMAT',
    'DEFAULT_CLIP_TEMPLATES'
]
