# Copyright (c) OpenMMLab. All rights reserved.
"""Class-embedding tables from the published CaGNet / SIGN word vectors.

CaGNet's GitHub repository ships, per dataset (``voc12``, ``context``,
``cocostuff``), ``dataset/<name>/word_vectors/{fasttext,word2vec}.pkl``:
pickles of one float array ``[rows, 300]`` in the row order of
``dataset/<name>/labels_refined.txt`` (``id<TAB>name``). SIGN's code
concatenates fastText ‖ word2vec and L2-normalises the 600-d rows; this
module does the same and reorders the rows to the project's class lists.

Pickles can run code when loaded, so :func:`load_numpy_pickle` rebuilds
numpy arrays only.
"""
import os
import re
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from ..datasets import class_names
from ..utils.safe_pickle import (RestrictedUnpickler, UnsafePickleError,
                                 numpy_array_globals)

PathLike = Union[str, os.PathLike]

# Row order of CaGNet's ``labels_refined.txt`` (row id = index).
CAGNET_LABELS = dict(
    voc=(
        'background',
        'aeroplane',
        'bicycle',
        'bird',
        'boat',
        'bottle',
        'bus',
        'car',
        'cat',
        'chair',
        'cow',
        'diningtable',
        'dog',
        'horse',
        'motorbike',
        'person',
        'potted_plant',
        'sheep',
        'sofa',
        'train',
        'tv',
    ),
    context=(
        'unlabel',
        'aeroplane',
        'bicycle',
        'bird',
        'boat',
        'bottle',
        'bus',
        'car',
        'cat',
        'chair',
        'cow',
        'diningtable',
        'dog',
        'horse',
        'motorbike',
        'person',
        'potted_plant',
        'sheep',
        'sofa',
        'train',
        'tv',
        'sky',
        'grass',
        'ground',
        'road',
        'building',
        'tree',
        'water',
        'mountain',
        'wall',
        'floor',
        'track',
        'keyboard',
        'ceiling',
    ),
    # COCO-Stuff ids 0-181; 11 of them (street sign, hat, shoe, eye glasses,
    # plate, mirror, window, desk, door, blender, hair brush) are never
    # annotated and have no class in mmseg's 171.
    cocostuff=(
        'person',
        'bicycle',
        'car',
        'motorcycle',
        'airplane',
        'bus',
        'train',
        'truck',
        'boat',
        'traffic light',
        'fire hydrant',
        'street sign',
        'stop sign',
        'parking meter',
        'bench',
        'bird',
        'cat',
        'dog',
        'horse',
        'sheep',
        'cow',
        'elephant',
        'bear',
        'zebra',
        'giraffe',
        'hat',
        'backpack',
        'umbrella',
        'shoe',
        'eye glasses',
        'handbag',
        'tie',
        'suitcase',
        'frisbee',
        'skis',
        'snowboard',
        'sports ball',
        'kite',
        'baseball bat',
        'baseball glove',
        'skateboard',
        'surfboard',
        'tennis racket',
        'bottle',
        'plate',
        'wine glass',
        'cup',
        'fork',
        'knife',
        'spoon',
        'bowl',
        'banana',
        'apple',
        'sandwich',
        'orange',
        'broccoli',
        'carrot',
        'hot dog',
        'pizza',
        'donut',
        'cake',
        'chair',
        'couch',
        'potted plant',
        'bed',
        'mirror',
        'dining table',
        'window',
        'desk',
        'toilet',
        'door',
        'tv',
        'laptop',
        'mouse',
        'remote',
        'keyboard',
        'cell phone',
        'microwave',
        'oven',
        'toaster',
        'sink',
        'refrigerator',
        'blender',
        'book',
        'clock',
        'vase',
        'scissors',
        'teddy bear',
        'hair drier',
        'toothbrush',
        'hair brush',
        'banner',
        'blanket',
        'branch',
        'bridge',
        'building-other',
        'bush',
        'cabinet',
        'cage',
        'cardboard',
        'carpet',
        'ceiling-other',
        'ceiling-tile',
        'cloth',
        'clothes',
        'clouds',
        'counter',
        'cupboard',
        'curtain',
        'desk-stuff',
        'dirt',
        'door-stuff',
        'fence',
        'floor-marble',
        'floor-other',
        'floor-stone',
        'floor-tile',
        'floor-wood',
        'flower',
        'fog',
        'food-other',
        'fruit',
        'furniture-other',
        'grass',
        'gravel',
        'ground-other',
        'hill',
        'house',
        'leaves',
        'light',
        'mat',
        'metal',
        'mirror-stuff',
        'moss',
        'mountain',
        'mud',
        'napkin',
        'net',
        'paper',
        'pavement',
        'pillow',
        'plant-other',
        'plastic',
        'platform',
        'playingfield',
        'railing',
        'railroad',
        'river',
        'road',
        'rock',
        'roof',
        'rug',
        'salad',
        'sand',
        'sea',
        'shelf',
        'sky-other',
        'skyscraper',
        'snow',
        'solid-other',
        'stairs',
        'stone',
        'straw',
        'structural-other',
        'table',
        'tent',
        'textile-other',
        'towel',
        'tree',
        'vegetable',
        'wall-brick',
        'wall-concrete',
        'wall-other',
        'wall-panel',
        'wall-stone',
        'wall-tile',
        'wall-wood',
        'water-other',
        'waterdrops',
        'window-blind',
        'window-other',
        'wood',
    ),
)

# Data sets whose classes take another data set's rows: CamVid's from
# COCO-Stuff's files, through the name map of
# ``mmseg_sign.datasets.class_names.CAMVID_TO_COCOSTUFF``.
CAGNET_SOURCE = dict(camvid='cocostuff')

CAGNET_DATASETS = tuple(CAGNET_LABELS) + tuple(CAGNET_SOURCE)

# Project class name -> CaGNet label name, tried after the exact name.
CAGNET_ALIASES = {'pottedplant': 'potted_plant', 'tvmonitor': 'tv'}


def load_numpy_pickle(path: PathLike) -> np.ndarray:
    """Load a pickled 2-D float numpy array ``[rows, dim]``, safely.

    Only numpy's array reconstruction is allowed; any other global (e.g.
    ``os.system``) raises :class:`UnsafePickleError` before it is called.

    Args:
        path (str): the ``.pkl`` file.

    Returns:
        np.ndarray: ``[rows, dim]``.
    """
    path = os.fspath(path)
    with open(path, 'rb') as f:
        try:
            array = RestrictedUnpickler(
                f, path, numpy_array_globals(),
                'only numpy arrays are allowed').load()
        except UnsafePickleError:
            raise
        except Exception as err:
            raise ValueError(f'cannot read {path} as a pickled numpy array '
                             f'({type(err).__name__}: {err})') from None
    if not isinstance(array, np.ndarray):
        raise ValueError(f'{path} holds a {type(array).__name__}, not a '
                         'numpy array [rows, dim]')
    if array.ndim != 2 or array.dtype.kind != 'f':
        raise ValueError(f'{path} holds a {array.dtype} array of shape '
                         f'{array.shape}; expected a 2-D float array '
                         '[rows, dim]')
    return array


def read_cagnet_labels(path: PathLike) -> List[Optional[str]]:
    """Read ``labels_refined.txt`` (``id<TAB>name``; ``id: name`` too).

    Args:
        path (str): the labels file.

    Returns:
        list: ``labels[row] = name``, None for ids the file skips.
    """
    path = os.fspath(path)
    rows = {}
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            match = re.match(r'\s*(\d+)\s*[\t:]\s*(\S.*?)\s*$', line)
            if match is None:
                raise ValueError(f'{path}:{lineno}: expected "id<TAB>name", '
                                 f'got {line.rstrip()!r}')
            row, name = int(match.group(1)), match.group(2)
            if row in rows:
                raise ValueError(f'{path}:{lineno}: row id {row} appears '
                                 'twice')
            rows[row] = name
    if not rows:
        raise ValueError(f'{path} names no rows')
    return [rows.get(row) for row in range(max(rows) + 1)]


def _check_dataset(dataset: str) -> str:
    if dataset not in CAGNET_DATASETS:
        raise ValueError(f'Unknown CaGNet dataset {dataset!r}; choose from '
                         f'{list(CAGNET_DATASETS)}')
    return dataset


def _project_classes(dataset: str) -> Tuple[str, ...]:
    return dict(
        voc=class_names.VOC20_CLASSES,
        context=class_names.CONTEXT33_CLASSES,
        cocostuff=class_names.COCOSTUFF171_CLASSES,
        camvid=tuple(c for c in class_names.CAMVID_CLASSES
                     if c not in class_names.CAMVID_HELD_OUT),
    )[_check_dataset(dataset)]


def _aliases(dataset: str) -> dict:
    """Project class name -> CaGNet label name for ``dataset``."""
    if dataset == 'camvid':
        return class_names.CAMVID_TO_COCOSTUFF
    return CAGNET_ALIASES


def _labels(
        dataset: str,
        labels_path: Optional[PathLike]) -> Tuple[List[Optional[str]], str]:
    """The row names and where they came from."""
    if labels_path is not None:
        return read_cagnet_labels(labels_path), os.fspath(labels_path)
    source = CAGNET_SOURCE.get(_check_dataset(dataset), dataset)
    return list(CAGNET_LABELS[source]), f'built-in CaGNet {source} labels'


def match_cagnet_rows(class_names: Sequence[str],
                      labels: Sequence[Optional[str]],
                      source: str = 'CaGNet labels',
                      aliases: Optional[dict] = None) -> List[int]:
    """Row id of every class: its exact name, else its alias, in
    ``labels`` (``labels[row] = name``).

    Args:
        class_names (Sequence[str]): the project's classes.
        labels (Sequence[str | None]): :func:`read_cagnet_labels`'s list.
        source (str): the labels' name, for messages.
        aliases (dict, optional): class name -> label name (default
            :data:`CAGNET_ALIASES`).

    Returns:
        list[int]: a row per class.
    """
    aliases = CAGNET_ALIASES if aliases is None else aliases
    index = {name: row for row, name in enumerate(labels) if name is not None}
    rows, missing = [], []
    for name in class_names:
        for candidate in (name, aliases.get(name)):
            if candidate in index:
                rows.append(index[candidate])
                break
        else:
            missing.append(name)
    if missing:
        unused = [
            n for r, n in enumerate(labels) if n is not None and r not in rows
        ]
        raise ValueError(
            f'class(es) {missing} not found in the {source} (aliases '
            f'{aliases}); unmatched labels there: {unused}')
    for i, row in enumerate(rows):
        if rows.index(row) != i:
            raise ValueError(f'classes {class_names[rows.index(row)]!r} and '
                             f'{class_names[i]!r} both match row {row} '
                             f'({labels[row]!r}) of the {source}')
    return rows


def cagnet_class_embeddings(
        dataset: str,
        fasttext_path: PathLike,
        word2vec_path: PathLike,
        class_names: Optional[Sequence[str]] = None,
        labels_path: Optional[PathLike] = None
) -> Tuple[List[str], np.ndarray]:
    """The published CaGNet / SIGN table for a project class list.

    Each row is fastText ‖ word2vec, L2-normalised after the concatenation
    only (as SIGN does; Context's per-source rows are not unit-norm, so
    there fastText weighs more than word2vec).

    Args:
        dataset (str): ``'voc'``, ``'context'``, ``'cocostuff'`` or
            ``'camvid'`` (COCO-Stuff's files, CamVid's classes).
        fasttext_path, word2vec_path (str): CaGNet's ``fasttext.pkl`` and
            ``word2vec.pkl`` (``[rows, 300]`` each).
        class_names (Sequence[str], optional): Classes in label order;
            defaults to the project's list of ``dataset``.
        labels_path (str, optional): ``labels_refined.txt`` giving the row
            order; defaults to :data:`CAGNET_LABELS`.

    Returns:
        tuple[list[str], np.ndarray]: Class names and a float32
        ``[K, 600]`` table.
    """
    labels, source = _labels(dataset, labels_path)
    names = list(
        _project_classes(dataset) if class_names is None else class_names)
    rows = match_cagnet_rows(names, labels, source, _aliases(dataset))
    parts = []
    for path in (fasttext_path, word2vec_path):
        array = load_numpy_pickle(path)
        if array.shape[0] != len(labels):
            raise ValueError(
                f'{os.fspath(path)} has {array.shape[0]} rows, but the '
                f'{source} name {len(labels)} rows (ids 0-{len(labels) - 1})')
        parts.append(array.astype(np.float64))
    if parts[0].shape == parts[1].shape and np.array_equal(*parts):
        # one file given twice (or a copy): fastText ‖ fastText, silently
        raise ValueError(
            f'{os.fspath(fasttext_path)} and {os.fspath(word2vec_path)} hold '
            'the same vectors: --fasttext and --word2vec need the two '
            "different files of CaGNet's word_vectors/ folder (fasttext.pkl "
            'and word2vec.pkl).')
    table = np.concatenate(parts, axis=1)[rows]
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    bad = np.flatnonzero(~(np.isfinite(norms[:, 0]) & (norms[:, 0] > 0)))
    if bad.size:
        raise ValueError(f'class {names[bad[0]]!r} (row {rows[bad[0]]}) has '
                         'a zero or non-finite vector')
    return names, (table / norms).astype(np.float32)


def cagnet_split_classes(dataset: str,
                         row_ids: Sequence[int],
                         class_names: Optional[Sequence[str]] = None,
                         labels_path: Optional[PathLike] = None) -> List[str]:
    """Project class names of CaGNet row ids (e.g. ``novel_cls.npy``), in
    the given order; rows without a class (background, unlabel,
    unannotated COCO ids) are left out.

    Args:
        dataset (str): ``'voc'``, ``'context'`` or ``'cocostuff'``.
        row_ids (Sequence[int]): CaGNet row ids.
        class_names (Sequence[str], optional): the project's classes
            (default: the dataset's).
        labels_path (str, optional): CaGNet's labels file (COCO-Stuff).

    Returns:
        list[str]: the class names.
    """
    labels, source = _labels(dataset, labels_path)
    names = list(
        _project_classes(dataset) if class_names is None else class_names)
    by_row = dict(
        zip(
            match_cagnet_rows(names, labels, source, _aliases(dataset)),
            names))
    bad = [int(r) for r in row_ids if not 0 <= int(r) < len(labels)]
    if bad:
        raise ValueError(f'row ids {bad} are outside the {source} (ids '
                         f'0-{len(labels) - 1})')
    return [by_row[int(r)] for r in row_ids if int(r) in by_row]
