"""Shared fixtures: small real data made on the fly."""
import numpy as np
import pytest


@pytest.fixture(scope='session')
def toy_root(tmp_path_factory):
    """A small toy dataset (VOC layout + class embeddings) on disk."""
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    root = tmp_path_factory.mktemp('toy')
    make_toy_dataset(str(root), num_train=24, num_val=8, seed=0)
    return str(root)


@pytest.fixture()
def embedding_table(tmp_path):
    """A random 5-class, 12-d class-embedding table."""
    from mmseg_sign.embeddings import save_class_embeddings
    names = ['c0', 'c1', 'c2', 'c3', 'c4']
    vectors = np.random.default_rng(0).normal(size=(5, 12))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path = tmp_path / 'emb.npz'
    save_class_embeddings(str(path), names, vectors.astype(np.float32))
    return str(path), names


@pytest.fixture(autouse=True, scope='session')
def mmseg_scope():
    """Build from mmseg's registries (as the Runner does with
    ``default_scope='mmseg'``)."""
    from mmseg.utils import register_all_modules
    import mmseg_sign  # noqa: F401
    register_all_modules(init_default_scope=True)
