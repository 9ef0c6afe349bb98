# Copyright (c) OpenMMLab. All rights reserved.
"""A small synthetic zero-shot segmentation benchmark with class attributes.

Every class has three attributes: a colour (hue), a texture and a typical
vertical position. Images hold a noisy void background (label 255) and a
few rectangles / ellipses whose colour, texture and vertical centre follow
their class. The class embeddings are a fixed random projection of the
one-hot attribute vector plus noise, written as real word2vec files and
turned into a table by :func:`build_class_embeddings`, the path real
embeddings take. Unseen classes are new combinations of attribute values
that seen classes have, so knowledge can transfer from seen to unseen.

Pure numpy + PIL (+ gensim for the word-vector files); no torch / mmcv.
"""
import colorsys
import inspect
import json
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from PIL import Image

from .. import embeddings  # its builder needs gensim: looked up at use
from ..datasets.class_names import TOY_ATTRIBUTES, TOY_CLASSES, TOY_UNSEEN
from ..embeddings.table import save_class_embeddings

#: Values of each attribute, in one-hot order.
TOY_ATTRIBUTE_VALUES = dict(
    colour=('red', 'yellow', 'green', 'blue'),
    texture=('plain', 'stripes', 'dots', 'checker'),
    position=('top', 'middle', 'bottom'),
)

#: Hue of every colour, in degrees.
TOY_HUES = dict(red=0.0, yellow=55.0, green=120.0, blue=225.0)

#: Typical vertical centre of objects, as a fraction of the image height.
TOY_POSITIONS = dict(top=0.2, middle=0.5, bottom=0.8)

#: Words written to the toy word-vector files besides the class names.
TOY_FILLER_WORDS = ('the', 'of', 'and', 'a', 'object', 'shape', 'image',
                    'pixel', 'background', 'thing')

IGNORE_INDEX = 255
WORD_VECTOR_FILES = ('word2vec_like.txt', 'fasttext_like.bin')
EMBEDDING_FILE = 'class_embeddings.npz'

#: the file in a toy data set that records the arguments that made it
TOY_DATA_RECORD = 'toy_data.json'


def check_toy_data(out_dir: str, seed: int, val_size=(64, 64)) -> None:
    """Refuse toy data in ``out_dir`` made with another seed or test-image
    size than a command means to use (``tools/toy_table.py`` reuses
    ``WORK_DIR/data{SEED}``): its runs would be stored as that seed's.
    A set made before the record existed is checked by its first test
    image (drawn again from the seed, at the size) and then recorded.

    Args:
        out_dir (str): a toy data set (``class_embeddings.npz`` written).
        seed (int): the data seed it must have.
        val_size (tuple[int, int]): its test images' ``(height, width)``.

    Raises:
        ValueError: naming what differs and the fix.
    """
    path = osp.join(out_dir, TOY_DATA_RECORD)
    want = dict(seed=int(seed), val_size=[int(s) for s in val_size])
    if osp.isfile(path):
        with open(path) as f:
            record = json.load(f)
        got = {k: record.get(k) for k in want}
        problem = None if got == want else \
            f'made with {got} ({path}), not {want}'
    else:  # made before the record: its first test image, drawn again
        problem = None if _first_val_image_matches(
            out_dir, int(seed),
            val_size) else (f'that is not {want}: its first test image is not '
                            'the one that seed draws at that size')
    if problem:
        raise ValueError(
            f'{out_dir} holds toy data {problem}; its runs would be stored '
            'as the wrong data set. Use another --work-dir, or delete '
            f'{out_dir} to have it made again.')
    if not osp.isfile(path):
        with open(path, 'w') as f:
            json.dump(want, f, indent=1)


def toy_attribute_matrix(
        class_names: Sequence[str] = TOY_CLASSES) -> np.ndarray:
    """One-hot attributes ``[K, 11]`` (colour 4 ‖ texture 4 ‖ position 3).

    Args:
        class_names (Sequence[str]): toy classes.

    Returns:
        np.ndarray: ``[K, 11]`` float32.
    """
    blocks = list(TOY_ATTRIBUTE_VALUES.values())
    width = sum(len(values) for values in blocks)
    matrix = np.zeros((len(class_names), width), np.float64)
    for row, name in enumerate(class_names):
        offset = 0
        for values, value in zip(blocks, TOY_ATTRIBUTES[name]):
            matrix[row, offset + values.index(value)] = 1.0
            offset += len(values)
    return matrix


def _attribute_words() -> List[Tuple[str, np.ndarray]]:
    """``(word, one-hot)`` of every attribute value, e.g. ``'red'``."""
    words = []
    width = sum(len(v) for v in TOY_ATTRIBUTE_VALUES.values())
    offset = 0
    for values in TOY_ATTRIBUTE_VALUES.values():
        for idx, value in enumerate(values):
            onehot = np.zeros(width)
            onehot[offset + idx] = 1.0
            words.append((value, onehot))
        offset += len(values)
    return words


def toy_word_vectors(dims: Sequence[int] = (300, 300),
                     noise: float = 0.2,
                     seed: int = 0) -> List[Dict[str, np.ndarray]]:
    """Word vectors of the toy vocabulary, one dict per source.

    For source ``s`` with projection ``P_s`` (``[11, dims[s]]``, standard
    normal) a class vector is ``attributes @ P_s`` plus Gaussian noise of
    ``noise`` times the per-dimension scale (``sqrt(3)``). Attribute words
    (``'red'``, ``'stripes'``, ...) get their own row of ``P_s`` plus noise;
    filler words are random.

    Args:
        dims (Sequence[int]): each source's width.
        noise (float): the standard deviation of the per-word noise.
        seed (int): the projections' and noise's seed.

    Returns:
        list[dict[str, np.ndarray]]: ``{word: vector}`` per source.
    """
    rng = np.random.default_rng(seed)
    attributes = toy_attribute_matrix()
    scale = np.sqrt(attributes.sum(axis=1)[0])
    sources = []
    for dim in (int(d) for d in dims):
        projection = rng.standard_normal((attributes.shape[1], int(dim)))
        vocab = {}
        for word in TOY_FILLER_WORDS:
            vocab[word] = scale * rng.standard_normal(dim)
        for word, onehot in _attribute_words():
            vocab[word] = onehot @ projection + \
                noise * rng.standard_normal(dim)
        for name, row in zip(TOY_CLASSES, attributes):
            vocab[name] = row @ projection + \
                noise * scale * rng.standard_normal(dim)
        sources.append({k: v.astype(np.float32) for k, v in vocab.items()})
    return sources


def _write_word_vectors(vocab: Dict[str, np.ndarray], path: str,
                        binary: bool) -> None:
    """Write a word -> vector dict as a word2vec file with gensim."""
    from gensim.models import KeyedVectors  # making data needs gensim
    words = list(vocab)
    vectors = KeyedVectors(vector_size=len(vocab[words[0]]))
    vectors.add_vectors(words, np.stack([vocab[w] for w in words]))
    vectors.save_word2vec_format(path, binary=binary)


def _hsv_to_rgb(hue_deg: float, sat: float, val: float) -> np.ndarray:
    return np.array(colorsys.hsv_to_rgb((hue_deg / 360.0) % 1.0, sat, val))


def _texture(texture: str, ys: np.ndarray, xs: np.ndarray,
             rng: np.random.Generator) -> np.ndarray:
    """Ink mask in {0, 1} of a texture, in object-local pixel coords."""
    period = rng.uniform(5.0, 7.0)
    if texture == 'plain':
        return np.zeros_like(ys)
    if texture == 'stripes':
        angle = rng.uniform(0.0, np.pi)
        phase = rng.uniform(0.0, 1.0)
        coord = (xs * np.cos(angle) + ys * np.sin(angle)) / period + phase
        return (coord % 1.0 < 0.5).astype(np.float64)
    if texture == 'dots':
        oy, ox = rng.uniform(0.0, period, size=2)
        dy = (ys + oy) % period - period / 2
        dx = (xs + ox) % period - period / 2
        return (dy**2 + dx**2 < (0.3 * period)**2).astype(np.float64)
    if texture == 'checker':
        cell = period / 2
        oy, ox = rng.uniform(0.0, period, size=2)
        parity = np.floor((ys + oy) / cell) + np.floor((xs + ox) / cell)
        return (parity % 2).astype(np.float64)
    raise ValueError(f'Unknown texture {texture!r}')


def _background(height: int, width: int,
                rng: np.random.Generator) -> np.ndarray:
    """A low-saturation, smoothly varying background in [0, 255]."""
    base = rng.uniform(60.0, 170.0) + rng.uniform(-15.0, 15.0, size=3)
    coarse = rng.normal(0.0, 20.0, size=(4, 4, 3))
    # Bilinear upsampling of the coarse grid (no scipy / cv2).
    gy = np.linspace(0, 3, height)
    gx = np.linspace(0, 3, width)
    y0 = np.minimum(gy.astype(int), 2)
    x0 = np.minimum(gx.astype(int), 2)
    fy = (gy - y0)[:, None, None]
    fx = (gx - x0)[None, :, None]
    c00 = coarse[y0][:, x0]
    c01 = coarse[y0][:, x0 + 1]
    c10 = coarse[y0 + 1][:, x0]
    c11 = coarse[y0 + 1][:, x0 + 1]
    smooth = (
        c00 * (1 - fy) * (1 - fx) + c01 * (1 - fy) * fx + c10 * fy * (1 - fx) +
        c11 * fy * fx)
    return base[None, None, :] + smooth


def render_toy_sample(
        height: int,
        width: int,
        rng: np.random.Generator,
        first_class: Optional[int] = None,
        objects_per_image: Tuple[int, int] = (2, 4),
        noise_std: float = 8.0,
        position_jitter: float = 0.06) -> Tuple[np.ndarray, np.ndarray]:
    """Render one image and its label map.

    Args:
        height, width (int): Image size.
        rng (np.random.Generator): Random source.
        first_class (int, optional): A class that must appear; its object
            is drawn last (on top). Others are drawn uniformly.
        objects_per_image (tuple[int, int]): Inclusive range of objects.
        noise_std (float): Std of the per-pixel Gaussian noise (0-255).
        position_jitter (float): Std of an object's vertical centre around
            its class position, as a fraction of the height.

    Returns:
        tuple: RGB ``uint8 [H, W, 3]`` and labels ``uint8 [H, W]`` (class
        index, 255 for background).
    """
    num_classes = len(TOY_CLASSES)
    num_objects = int(
        rng.integers(objects_per_image[0], objects_per_image[1] + 1))
    classes = list(rng.integers(0, num_classes, size=num_objects))
    if first_class is not None:
        classes[-1] = first_class
    image = _background(height, width, rng)
    label = np.full((height, width), IGNORE_INDEX, np.uint8)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64) + 0.5
    for cls in classes:
        colour, texture, position = TOY_ATTRIBUTES[TOY_CLASSES[cls]]
        half_h = rng.uniform(0.09, 0.16) * height
        half_w = rng.uniform(0.1, 0.22) * width
        cy = (TOY_POSITIONS[position] +
              rng.normal(0.0, position_jitter)) * height
        cy = float(np.clip(cy, 0.08 * height, 0.92 * height))
        cx = rng.uniform(0.12, 0.88) * width
        dy, dx = (ys - cy) / half_h, (xs - cx) / half_w
        if rng.random() < 0.5:
            mask = (np.abs(dy) <= 1) & (np.abs(dx) <= 1)
        else:
            mask = dy**2 + dx**2 <= 1
        if not mask.any():
            continue
        rgb = 255.0 * _hsv_to_rgb(TOY_HUES[colour] + rng.normal(
            0.0, 6.0), rng.uniform(0.65, 1.0), rng.uniform(0.7, 1.0))
        ink = _texture(texture, ys - (cy - half_h), xs - (cx - half_w), rng)
        shade = 1.0 - 0.6 * ink
        image[mask] = rgb[None, :] * shade[mask][:, None]
        label[mask] = cls
    image = image + rng.normal(0.0, noise_std, size=image.shape)
    return np.clip(np.rint(image), 0, 255).astype(np.uint8), label


def build_toy_class_embeddings(out_dir: str,
                               dims: Sequence[int] = (300, 300),
                               noise: float = 0.2,
                               seed: int = 0) -> Tuple[str, List[str]]:
    """Write the toy word-vector files and build ``class_embeddings.npz``.

    Source 0 is a word2vec text file, source 1 a word2vec binary file; the
    table is built from them by :func:`build_class_embeddings` like real
    embeddings (per-source L2 norm, concatenation, whole-row L2 norm).

    Args:
        out_dir (str): the toy dataset's root.
        dims (Sequence[int]): each source's width.
        noise (float): as :func:`toy_word_vectors`.
        seed (int): as :func:`toy_word_vectors`.

    Returns:
        tuple[str, list[str]]: the table's path and the source files.

    Returns:
        tuple: The table path and the word-vector file paths.
    """
    if len(dims) < 1:
        raise ValueError('Need at least one embedding source')
    vec_dir = osp.join(out_dir, 'word_vectors')
    os.makedirs(vec_dir, exist_ok=True)
    sources, paths = [], []
    for idx, vocab in enumerate(toy_word_vectors(dims, noise, seed)):
        binary = idx % 2 == 1
        stem, ext = osp.splitext(WORD_VECTOR_FILES[idx % 2])
        name = stem + (f'_{idx}' if idx >= 2 else '') + ext
        path = osp.join(vec_dir, name)
        _write_word_vectors(vocab, path, binary)
        paths.append(path)
        sources.append(
            dict(
                path=path,
                format='word2vec_binary' if binary else 'word2vec',
                show_progress=False))
    table = embeddings.build_class_embeddings(
        TOY_CLASSES, sources, use_default_synonyms=False)
    table_path = save_class_embeddings(
        osp.join(out_dir, EMBEDDING_FILE), TOY_CLASSES, table)
    return table_path, paths


def make_toy_dataset(out_dir: str = 'data/toy',
                     num_train: int = 200,
                     num_val: int = 50,
                     train_size: Tuple[int, int] = (64, 64),
                     val_size: Tuple[int, int] = (64, 64),
                     seed: int = 0,
                     objects_per_image: Tuple[int, int] = (2, 4),
                     noise_std: float = 8.0,
                     position_jitter: float = 0.06,
                     embed_dims: Sequence[int] = (300, 300),
                     embed_noise: float = 0.2) -> dict:
    """Write the toy zero-shot dataset in VOC layout.

    Layout::

        out_dir/JPEGImages/<id>.png             RGB uint8 (lossless PNG)
        out_dir/SegmentationClass/<id>.png      'L' uint8, 0..K-1, 255 void
        out_dir/ImageSets/Segmentation/{train,val}.txt
        out_dir/word_vectors/word2vec_like.txt, fasttext_like.bin
        out_dir/class_embeddings.npz

    Image ``i`` of a split always contains class ``i % K``, so every class
    (unseen ones included) appears in both splits when a split has at
    least K images. The same arguments give the same bytes.

    Args:
        out_dir (str): Dataset root. Defaults to ``'data/toy'``.
        num_train, num_val (int): Images per split.
        train_size, val_size (tuple[int, int]): ``(height, width)`` of the
            images of each split.
        seed (int): Random seed.
        objects_per_image (tuple[int, int]): Inclusive object count range.
        noise_std (float): Per-pixel noise std (0-255 scale).
        position_jitter (float): Std of object centres around their class
            position, as a fraction of the height.
        embed_dims (Sequence[int]): Dims of each word-vector source.
        embed_noise (float): Relative noise of the class word vectors.

    Returns:
        dict: A summary (paths, classes, split sizes, table shape).
    """
    train_seq, val_seq, embed_seq = np.random.SeedSequence(seed).spawn(3)
    img_dir = osp.join(out_dir, 'JPEGImages')
    ann_dir = osp.join(out_dir, 'SegmentationClass')
    split_dir = osp.join(out_dir, 'ImageSets', 'Segmentation')
    for folder in (img_dir, ann_dir, split_dir):
        os.makedirs(folder, exist_ok=True)
    num_classes = len(TOY_CLASSES)
    pixel_counts = {}
    for split, count, size, seq in (('train', num_train, train_size,
                                     train_seq), ('val', num_val, val_size,
                                                  val_seq)):
        height, width = (int(s) for s in size)
        rng = np.random.default_rng(seq)
        ids = []
        counts = np.zeros(num_classes, np.int64)
        for idx in range(int(count)):
            image, label = render_toy_sample(height, width, rng,
                                             idx % num_classes,
                                             objects_per_image, noise_std,
                                             position_jitter)
            sample_id = f'{split}_{idx:05d}'
            Image.fromarray(image).save(osp.join(img_dir, f'{sample_id}.png'))
            Image.fromarray(label).save(osp.join(ann_dir, f'{sample_id}.png'))
            counts += np.bincount(
                label[label != IGNORE_INDEX], minlength=num_classes)
            ids.append(sample_id)
        with open(osp.join(split_dir, f'{split}.txt'), 'w') as f:
            f.write(''.join(f'{i}\n' for i in ids))
        pixel_counts[split] = dict(zip(TOY_CLASSES, counts.tolist()))
    embed_seed = int(embed_seq.generate_state(1)[0])
    table_path, vector_paths = build_toy_class_embeddings(
        out_dir, embed_dims, embed_noise, embed_seed)
    # last: what made the set, for the tools that reuse it (toy_table)
    with open(osp.join(out_dir, TOY_DATA_RECORD), 'w') as f:
        json.dump(
            dict(
                seed=int(seed),
                num_train=int(num_train),
                num_val=int(num_val),
                train_size=[int(s) for s in train_size],
                val_size=[int(s) for s in val_size],
                objects_per_image=[int(n) for n in objects_per_image],
                noise_std=float(noise_std),
                position_jitter=float(position_jitter),
                embed_dims=[int(d) for d in embed_dims],
                embed_noise=float(embed_noise)),
            f,
            indent=1)
    return dict(
        out_dir=out_dir,
        classes=list(TOY_CLASSES),
        unseen_classes=list(TOY_UNSEEN),
        num_train=int(num_train),
        num_val=int(num_val),
        train_size=tuple(int(s) for s in train_size),
        val_size=tuple(int(s) for s in val_size),
        class_embeddings=table_path,
        embedding_dim=int(sum(embed_dims)),
        word_vectors=vector_paths,
        pixel_counts=pixel_counts)


def _first_val_image_matches(out_dir: str, seed: int, val_size) -> bool:
    """Whether ``out_dir``'s first test image is the one
    :func:`make_toy_dataset` draws for ``seed`` at ``val_size`` (its other
    arguments at their defaults); lossless PNG, so byte-equal pixels."""
    defaults = {
        k: p.default
        for k, p in inspect.signature(make_toy_dataset).parameters.items()
    }
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[1])
    image, _ = render_toy_sample(
        int(val_size[0]), int(val_size[1]), rng, 0,
        defaults['objects_per_image'], defaults['noise_std'],
        defaults['position_jitter'])
    path = osp.join(out_dir, 'JPEGImages', 'val_00000.png')
    if not osp.isfile(path):
        return False
    with Image.open(path) as im:
        found = np.asarray(im)
    return found.shape == image.shape and np.array_equal(found, image)
