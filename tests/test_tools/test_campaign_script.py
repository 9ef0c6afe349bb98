"""tools/analysis/camvid_lite0_campaign.sh: the data are checked once
before any run starts, and the script ends with the failing command's
exit status (not 0 after a failed run)."""
import os
import os.path as osp
import subprocess

import pytest
from e2e_utils import REPO

# every test here starts the script (a bash process)
pytestmark = pytest.mark.slow

SCRIPT = osp.join(REPO, 'tools', 'analysis', 'camvid_lite0_campaign.sh')


def run(tmp_path, **env):
    return subprocess.run(
        ['bash', SCRIPT, str(tmp_path / 'work'), '0'],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, **env))


def test_missing_data_stop_the_campaign_before_any_run(tmp_path):
    proc = run(tmp_path, DATA=str(tmp_path / 'no_camvid'), PY='false')
    assert proc.returncode == 2, proc
    assert 'no_camvid/img_dir/train is missing' in proc.stderr
    assert 'seeds' not in proc.stdout  # no run started


def test_a_failed_run_is_the_scripts_exit_status(tmp_path):
    data = tmp_path / 'camvid'
    for folder in ('img_dir/train', 'ann_dir/val'):
        (data / folder).mkdir(parents=True)
    table = tmp_path / 'emb.npz'
    table.write_bytes(b'x')
    proc = run(tmp_path, DATA=str(data), EMBEDDINGS=str(table), PY='false')
    assert proc.returncode == 1, proc
    assert 'stopped with rc=1' in proc.stderr
    assert 'done:' not in proc.stdout  # no table was written
