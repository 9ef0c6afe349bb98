"""tools/analysis/plot_ast_weights.py: the eq. 16 curves, and its output
and temperatures checked before it draws (an output under /proc
failed at the end with a raw OSError)."""
import os
import os.path as osp
import sys

import pytest
import tool_server
from e2e_utils import REPO

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

TOOL = osp.join(REPO, 'tools', 'analysis', 'plot_ast_weights.py')


def run(*args):
    return tool_server.run([sys.executable, TOOL, *args],
                           capture_output=True,
                           text=True,
                           timeout=120,
                           env=dict(os.environ, PYTHONWARNINGS='ignore'))


def test_draws_the_curves(tmp_path):
    out = tmp_path / 'w.png'
    proc = run('--out', str(out), '--temperatures', '0.5', '2')
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert [p.name for p in tmp_path.iterdir()] == ['w.png']  # atomic


def test_bad_output_and_temperatures_are_refused_first(tmp_path):
    proc = run('--out', '/proc/ast_weights.png')
    assert proc.returncode == 2 and 'cannot be written' in proc.stderr
    proc = run('--out', str(tmp_path))
    assert proc.returncode == 2 and 'is a directory' in proc.stderr
    proc = run('--out', str(tmp_path / 'w.png'), '--temperatures', '1', '0')
    assert proc.returncode == 2 and '--temperatures must be > 0' in \
        proc.stderr
    assert not list(tmp_path.iterdir())
