"""tools/analysis/gpu_check.sh: stopped, it stops every step it
started (each runs under ``timeout``, in a process group of its own, which
a signal to the script alone would miss: on a GPU machine the orphans
held the GPU); without its toy data it says so and fails (it exited 0)."""
import os
import os.path as osp
import signal
import subprocess
import sys
import time

import pytest
from e2e_utils import REPO

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

SCRIPT = osp.join(REPO, 'tools', 'analysis', 'gpu_check.sh')


def _env(tmp_path, data):
    return dict(
        os.environ,
        SMOKE='1',
        PY=sys.executable,
        DATA=str(data),
        WORK=str(tmp_path / 'work'),
        PYTHONWARNINGS='ignore')


def _descendants_running(marker):
    """Processes whose command line holds ``marker`` (the work folder)."""
    out = subprocess.run(['ps', '-ww', '-eo', 'pid,args'],
                         capture_output=True,
                         text=True).stdout
    return [
        line for line in out.splitlines()[1:]
        if marker in line and 'ps -ww' not in line
    ]


def test_stopping_the_script_stops_its_steps(tmp_path):
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    data = tmp_path / 'data0'  # as the script's DATA is made (small)
    make_toy_dataset(
        str(data), num_train=24, num_val=8, val_size=(96, 96), seed=0)
    proc = subprocess.Popen(['bash', SCRIPT],
                            env=_env(tmp_path, data),
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            text=True)
    work = str(tmp_path / 'work')
    out = tmp_path / 'work-smoke' / 'out'
    steps = out / 'report.md'  # rewritten after every step
    deadline = time.time() + 240
    # wait until the toy runs train (step 2 started and a run is alive)
    while time.time() < deadline:
        text = steps.read_text() if steps.exists() else ''
        if 'toy: GPU and CPU started' in text and any(
                'tools/train.py' in line
                for line in _descendants_running(work)):
            break
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        time.sleep(0.5)
    else:
        proc.kill()
        raise AssertionError('the toy step never started')
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) != 0
    deadline = time.time() + 30
    while _descendants_running(work) and time.time() < deadline:
        time.sleep(0.5)
    assert _descendants_running(work) == [], _descendants_running(work)
    # what a device tool brings back: a few files, the report whole
    # (ten and more files before, and a tool that returns 8
    # dropped the toy's runs)
    assert {p.name
            for p in out.iterdir()
            } <= {'report.md', 'parity.json', 'toy.json'}
    report = (out / 'report.md').read_text()
    for part in ('## versions', '## steps', '## parity',
                 '| term | max rel. diff cpu:float32 vs cpu:float64'):
        assert part in report, report[:2000]


def test_missing_toy_data_is_an_error(tmp_path):
    proc = subprocess.run(['bash', SCRIPT],
                          env=_env(tmp_path, tmp_path / 'nowhere'),
                          capture_output=True,
                          text=True,
                          timeout=120)
    assert proc.returncode == 1
    assert 'holds no toy data (class_embeddings.npz); make it' in \
        proc.stdout + proc.stderr
