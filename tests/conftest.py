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


# ------------------------------------------------------------ test tiers
# `pytest -m "not slow"` is the quick tier for developers (unit level,
# every package module; about a minute with 2 workers); CI runs everything.
# A test is slow when it starts a tool process or trains a run, and says so
# where it lives: `pytestmark = pytest.mark.slow` in a module of only such
# tests, `@pytest.mark.slow` (or `pytest.param(..., marks=...)`) on the
# others. Every run lists the unmarked tests that took longer than
# QUICK_LIMIT_S, so a slow test left unmarked is seen.
QUICK_LIMIT_S = 2.0
_SLOW_UNMARKED = []  # (node id, seconds) of the current session


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'slow: starts a tool process or trains a run (the quick '
        'tier is -m "not slow")')


def pytest_runtest_logreport(report):
    """Collect the quick-tier tests (not marked slow) whose call took over
    the limit (with xdist the reports reach the controlling process)."""
    if report.when != 'call' or 'slow' in report.keywords:
        return
    if report.duration > QUICK_LIMIT_S:
        _SLOW_UNMARKED.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter):
    """Report the unmarked tests over QUICK_LIMIT_S (mark them slow, or make
    them quick)."""
    if not _SLOW_UNMARKED:
        return
    terminalreporter.section(
        f'quick-tier tests over {QUICK_LIMIT_S:g} s (mark them slow or '
        'make them faster)')
    for nodeid, seconds in sorted(_SLOW_UNMARKED, key=lambda x: -x[1]):
        terminalreporter.write_line(f'{seconds:7.2f} s  {nodeid}')
