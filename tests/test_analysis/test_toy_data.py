# Copyright (c) OpenMMLab. All rights reserved.
"""The toy zero-shot benchmark: layout, determinism, attributes, vectors."""
import importlib.util
import json
import os
import os.path as osp
import re

import numpy as np
import pytest
from gensim.models import KeyedVectors
from PIL import Image

from mmseg_sign.analysis.toy_data import (TOY_ATTRIBUTE_VALUES, TOY_POSITIONS,
                                          make_toy_dataset,
                                          toy_attribute_matrix)
from mmseg_sign.datasets.class_names import (TOY_ATTRIBUTES, TOY_CLASSES,
                                             TOY_PALETTE, TOY_UNSEEN)
from mmseg_sign.embeddings import load_class_embeddings

REPO_ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
K = len(TOY_CLASSES)


def read_split(root, split):
    with open(osp.join(root, 'ImageSets', 'Segmentation',
                       f'{split}.txt')) as f:
        ids = f.read().split()
    images, labels = [], []
    for sample_id in ids:
        img = Image.open(osp.join(root, 'JPEGImages', f'{sample_id}.png'))
        ann = Image.open(
            osp.join(root, 'SegmentationClass', f'{sample_id}.png'))
        assert img.mode == 'RGB' and ann.mode == 'L'
        images.append(np.array(img))
        labels.append(np.array(ann))
    return ids, images, labels


def all_files(root):
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = osp.join(folder, name)
            with open(path, 'rb') as f:
                found[osp.relpath(path, root)] = f.read()
    return found


@pytest.fixture(scope='module')
def toy(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('toy'))
    summary = make_toy_dataset(root)  # the defaults
    train = read_split(root, 'train')
    val = read_split(root, 'val')
    return root, summary, train, val


def test_attribute_table():
    assert len(TOY_PALETTE) == K and 8 <= K <= 10
    assert all(len(c) == 3 for c in TOY_PALETTE)
    assert len(set(map(tuple, TOY_PALETTE))) == K
    assert all(re.fullmatch('[a-z]+', name) for name in TOY_CLASSES)
    assert 2 <= len(TOY_UNSEEN) <= 3 and set(TOY_UNSEEN) < set(TOY_CLASSES)
    seen = [c for c in TOY_CLASSES if c not in TOY_UNSEEN]
    assert len({TOY_ATTRIBUTES[c] for c in TOY_CLASSES}) == K
    for name in TOY_CLASSES:
        for values, value in zip(TOY_ATTRIBUTE_VALUES.values(),
                                 TOY_ATTRIBUTES[name]):
            assert value in values
    for name in TOY_UNSEEN:
        attrs = TOY_ATTRIBUTES[name]
        for pos, value in enumerate(attrs):  # every value seen somewhere
            assert any(TOY_ATTRIBUTES[s][pos] == value for s in seen), name
        for other in seen:  # a new combination: >= 2 attributes differ
            diff = sum(a != b for a, b in zip(attrs, TOY_ATTRIBUTES[other]))
            assert diff >= 2, (name, other)
    matrix = toy_attribute_matrix()
    assert matrix.shape == (K, 11)
    np.testing.assert_array_equal(matrix.sum(axis=1), 3)


def test_layout_and_labels(toy):
    root, summary, (train_ids, train_imgs, train_lbls), \
        (val_ids, val_imgs, val_lbls) = toy
    assert len(train_ids) == 200 and len(val_ids) == 50
    assert summary['num_train'] == 200 and summary['num_val'] == 50
    assert summary['classes'] == list(TOY_CLASSES)
    assert summary['unseen_classes'] == list(TOY_UNSEEN)
    assert all(img.shape == (64, 64, 3) and img.dtype == np.uint8
               for img in train_imgs + val_imgs)
    for split_labels, split in ((train_lbls, 'train'), (val_lbls, 'val')):
        stack = np.stack(split_labels)
        values = set(np.unique(stack).tolist())
        assert values <= set(range(K)) | {255}
        assert 255 in values  # void background
        counts = np.bincount(stack[stack != 255], minlength=K)
        assert (counts > 0).all(), (split, counts)
        assert counts.tolist() == [
            summary['pixel_counts'][split][c] for c in TOY_CLASSES
        ]
        for name in TOY_UNSEEN:
            assert counts[TOY_CLASSES.index(name)] > 0
    assert osp.isfile(osp.join(root, 'word_vectors', 'word2vec_like.txt'))
    assert osp.isfile(osp.join(root, 'word_vectors', 'fasttext_like.bin'))


def test_class_appearance(toy):
    _, _, (_, imgs, lbls), _ = toy
    images = np.stack(imgs).astype(np.float64)
    labels = np.stack(lbls)
    rows = np.broadcast_to(
        (np.arange(labels.shape[1]) + 0.5)[None, :, None] / labels.shape[1],
        labels.shape)
    mean_row = {}
    for idx, name in enumerate(TOY_CLASSES):
        mask = labels == idx
        mean_row[name] = rows[mask].mean()
        colour, texture, _ = TOY_ATTRIBUTES[name]
        r, g, b = images[mask].mean(axis=0)
        if colour == 'red':
            assert r > g + 40 and r > b + 40, (name, r, g, b)
        elif colour == 'green':
            assert g > r + 40 and g > b + 40, (name, r, g, b)
        elif colour == 'blue':
            assert b > r + 40 and b > g + 40, (name, r, g, b)
        else:  # yellow
            assert min(r, g) > b + 60, (name, r, g, b)
    # vertical position: class mean rows ordered as the position attribute
    groups = {
        pos: [mean_row[c] for c in TOY_CLASSES if TOY_ATTRIBUTES[c][2] == pos]
        for pos in TOY_POSITIONS
    }
    assert max(groups['top']) < min(groups['middle'])
    assert max(groups['middle']) < min(groups['bottom'])
    for pos, values in groups.items():
        assert abs(np.mean(values) - TOY_POSITIONS[pos]) < 0.1, pos


def test_texture_contrast(toy):
    _, _, (_, imgs, lbls), _ = toy
    spread = {t: [] for t in TOY_ATTRIBUTE_VALUES['texture']}
    for img, lbl in zip(imgs[:60], lbls[:60]):
        gray = img.astype(np.float64).mean(axis=2)
        for idx in np.unique(lbl[lbl != 255]):
            mask = lbl == idx
            if mask.sum() >= 40:
                spread[TOY_ATTRIBUTES[TOY_CLASSES[idx]][1]].append(
                    gray[mask].std())
    plain = np.median(spread['plain'])
    for texture in ('stripes', 'dots', 'checker'):
        assert np.median(spread[texture]) > 2 * plain, (texture, spread)


def test_embeddings_follow_attributes(toy):
    root, summary, _, _ = toy
    path = osp.join(root, 'class_embeddings.npz')
    assert summary['class_embeddings'] == path
    table = load_class_embeddings(path, TOY_CLASSES)
    assert table.shape == (K, 600) and table.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1, rtol=1e-5)

    # independent recomputation from the two word2vec files
    text = osp.join(root, 'word_vectors', 'word2vec_like.txt')
    with open(text) as f:
        count, dim = map(int, f.readline().split())
        vocab = {}
        for line in f:
            parts = line.split()
            vocab[parts[0]] = np.array(parts[1:], np.float64)
    assert len(vocab) == count > K and dim == 300
    binary = KeyedVectors.load_word2vec_format(
        osp.join(root, 'word_vectors', 'fasttext_like.bin'), binary=True)
    rows = []
    for name in TOY_CLASSES:
        a = vocab[name] / np.linalg.norm(vocab[name])
        b = binary[name].astype(np.float64)
        b /= np.linalg.norm(b)
        row = np.concatenate([a, b])
        rows.append(row / np.linalg.norm(row))
    np.testing.assert_allclose(table, np.array(rows), atol=1e-6)

    # classes sharing an attribute are closer than classes sharing none
    attrs = toy_attribute_matrix()
    shared = attrs @ attrs.T
    cosine = table @ table.T
    off = ~np.eye(K, dtype=bool)
    one = cosine[off & (shared == 1)].mean()
    none = cosine[off & (shared == 0)].mean()
    assert one > none + 0.15, (one, none)
    # and the table is (nearly) a linear function of the attributes
    coef, *_ = np.linalg.lstsq(attrs, table, rcond=None)
    residual = table - attrs @ coef
    centred = table - table.mean(axis=0)
    assert (residual**2).sum() < 0.1 * (centred**2).sum()


def test_determinism_sizes_and_cli(tmp_path, capsys):
    kwargs = dict(
        num_train=12, num_val=10, val_size=(96, 80), seed=3, embed_dims=(8, 6))
    first = make_toy_dataset(str(tmp_path / 'a'), **kwargs)
    make_toy_dataset(str(tmp_path / 'b'), **kwargs)
    files_a, files_b = all_files(tmp_path / 'a'), all_files(tmp_path / 'b')
    # images and labels, 2 lists, 2 word-vector files, the table, and the
    # record of the arguments (toy_data.json)
    assert len(files_a) == 2 * (12 + 10) + 6
    assert files_a == files_b
    assert json.loads(files_a['toy_data.json']) == dict(
        seed=3,
        num_train=12,
        num_val=10,
        train_size=[64, 64],
        val_size=[96, 80],
        objects_per_image=[2, 4],
        noise_std=8.0,
        position_jitter=0.06,
        embed_dims=[8, 6],
        embed_noise=0.2)
    assert first['embedding_dim'] == 14
    other = make_toy_dataset(str(tmp_path / 'c'), **dict(kwargs, seed=4))
    files_c = all_files(tmp_path / 'c')
    assert files_c['JPEGImages/train_00000.png'] != \
        files_a['JPEGImages/train_00000.png']
    assert other['val_size'] == (96, 80)
    root = str(tmp_path / 'a')
    _, imgs, lbls = read_split(root, 'val')
    assert imgs[0].shape == (96, 80, 3) and lbls[0].shape == (96, 80)
    _, imgs, _ = read_split(root, 'train')
    assert imgs[0].shape == (64, 64, 3)
    table = load_class_embeddings(
        osp.join(root, 'class_embeddings.npz'), TOY_CLASSES)
    assert table.shape == (K, 14)

    spec = importlib.util.spec_from_file_location(
        'tool_make_toy_dataset',
        osp.join(REPO_ROOT, 'tools', 'make_toy_dataset.py'))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    out = str(tmp_path / 'cli')
    tool.main([
        '--out', out, '--num-train', '12', '--num-val', '10', '--val-size',
        '96', '80', '--seed', '3', '--embed-dims', '8', '6'
    ])
    printed = json.loads(capsys.readouterr().out)
    assert printed['num_train'] == 12 and printed['embedding_dim'] == 14
    assert all_files(out) == files_a
