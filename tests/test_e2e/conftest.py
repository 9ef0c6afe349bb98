"""Fixtures of the end-to-end tests."""
import pytest


@pytest.fixture(scope='session')
def bad_input_ctx(tmp_path_factory, toy_root):
    """The bad-input tables' shared context (``tests/bad_input_utils.py``):
    toy data and the checkpoints of one real two-iteration SIGN run, made
    once per test process."""
    from bad_input_utils import Context
    return Context(str(tmp_path_factory.mktemp('bad_run')), toy_root)
