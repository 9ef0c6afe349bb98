"""ClassEmbeddingMixin (models/decode_heads/class_embedding_mixin.py): a
checkpoint's M replaces the table file's only where they agree; where the
file names another table, loading fails naming it (tools/test.py
scored with the checkpoint's vectors under the file's class names)."""
import re

import numpy as np
import pytest
from mmengine.runner.checkpoint import load_state_dict
from model_utils import tiny_model

from mmseg_sign.embeddings import save_class_embeddings


def _table(path, names, seed, dim=12):
    vectors = np.random.default_rng(seed).normal(size=(len(names), dim))
    save_class_embeddings(str(path), names, vectors.astype(np.float32))
    return str(path)


def test_the_checkpoints_own_table_loads(embedding_table):
    path, _ = embedding_table
    trained = tiny_model(path).state_dict()
    model = tiny_model(path)
    load_state_dict(model, trained, strict=True)
    assert (model.decode_head.class_embedding ==
            trained['decode_head.class_embedding']).all()


@pytest.mark.parametrize('names, seed, dim, shown', [
    (['c0', 'c1', 'c2', 'c3', 'c4'], 1, 12, '5 x 12, other vectors'),
    (['road', 'sky', 'car', 'c3', 'c4'], 1, 12, '5 x 12, other vectors'),
    (['c0', 'c1', 'c2', 'c3', 'c4'], 0, 8, '5 x 12)'),
])
def test_another_table_is_refused(embedding_table, tmp_path, names, seed, dim,
                                  shown):
    path, _ = embedding_table
    trained = tiny_model(path).state_dict()
    other = _table(tmp_path / 'other.npz', names, seed, dim)
    model = tiny_model(other)
    before = model.decode_head.class_embedding.clone()
    with pytest.raises(
            ValueError,
            match=(
                rf'the class-embedding table {other} .*classes '
                rf'{names[0]}, {names[1]}.* is not the table this checkpoint '
                r'was trained with \(its decode_head.class_embedding: ' +
                re.escape(shown) + r'.*tools/add_classes.py')):
        load_state_dict(model, trained, strict=False)
    assert (model.decode_head.class_embedding == before).all()


def test_a_missing_table_file_takes_the_checkpoints(embedding_table, tmp_path):
    path, _ = embedding_table
    trained = tiny_model(path).state_dict()
    model = tiny_model(str(tmp_path / 'missing.npz'))
    load_state_dict(model, trained, strict=True)
    assert (model.decode_head.class_embedding ==
            trained['decode_head.class_embedding']).all()
