"""The first 5 iterations' losses of every SIGN stage of the shipped toy
config (seed 0, ``tools/train.py``, real dataloader workers) equal the
golden record written by ``tests/data/make_stage_losses_golden.py``: code
that is only moved or renamed must not change what training computes."""
import json
import math
import os.path as osp
import sys

import pytest

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

HERE = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, osp.join(HERE, 'data'))
from make_stage_losses_golden import GOLDEN, run_stages  # noqa: E402


def test_first_iterations_of_every_stage_match_the_golden_record(
        toy_root, tmp_path):
    with open(GOLDEN) as f:
        golden = json.load(f)
    rows = run_stages(toy_root, str(tmp_path))
    assert [r['iter'] for r in rows] == [r['iter'] for r in golden] == \
        list(range(1, 16))
    for got, want in zip(rows, golden):
        assert set(got) == set(want), (got['iter'], set(got) ^ set(want))
        for key, value in want.items():
            # float32 rounding differs between CPUs (AVX2 / AVX-512); on
            # the machine that wrote the record the numbers are equal
            assert math.isclose(
                got[key], value, rel_tol=2e-4,
                abs_tol=1e-6), (got['iter'], key, got[key], value)
