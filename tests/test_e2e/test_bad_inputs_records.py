"""Bad inputs, records: a tool's output never replaces its input, another run's
checkpoints or config record: each case is what a user does and the clear
error (or correct behaviour) it must get, run by ``test_bad_input`` (shared
context and helpers: ``tests/bad_input_utils.py``; every case is listed in
docs/robustness.md)."""
import os

import pytest
from bad_input_utils import (Case, export_onto, mmseg_train_in_locked_work_dir,
                             mmseg_train_refused_in_a_used_work_dir,
                             overwrite_with_a_shorter_plan,
                             publish_onto_itself, publish_through_link,
                             run_case, run_test_py_in_the_training_work_dir,
                             take_over_lock_of_killed_run_with_live_workers,
                             take_over_stale_lock, train_in_locked_work_dir)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

CASES = [
    # ---- data loss 1: the output replaces the input
    Case('publish_onto_itself_no_hash',
         'tools/publish_model.py IN IN --no-hash', publish_onto_itself(True),
         r'the output \S+ is the input checkpoint'),
    Case('publish_onto_itself_hashed', 'tools/publish_model.py IN IN',
         publish_onto_itself(False),
         r'the output \S+ is the input checkpoint'),
    Case(
        'publish_through_symlinked_dir',
        'tools/publish_model.py IN LINK/iter_2.pth --no-hash, LINK a '
        "symlink to IN's folder", publish_through_link('symlink_dir'),
        r'the output \S+ is the input checkpoint'),
    Case('publish_onto_hard_link', 'tools/publish_model.py IN OUT '
         '--no-hash, OUT a hard link of IN', publish_through_link('hardlink'),
         r'the output \S+ is the input checkpoint'),
    Case('export_onto_checkpoint',
         'tools/deployment/pytorch2onnx.py CFG CKPT --out CKPT',
         export_onto('checkpoint'), r'the output \S+ is the checkpoint'),
    Case('export_onto_config',
         'tools/deployment/pytorch2onnx.py CFG CKPT --out CFG',
         export_onto('config'), r'the output \S+ is the config'),
    # ---- --overwrite-checkpoints
    Case(
        'overwrite_with_a_shorter_plan',
        'tools/train.py --overwrite-checkpoints with a 1-iteration plan in '
        "a work dir holding a 2-iteration run's iter_2.pth",
        overwrite_with_a_shorter_plan(),
        r"--overwrite-checkpoints: the earlier run's 2 checkpoint file\(s\) "
        r'\(iter_2\.pth, last_checkpoint\) moved to \S+/replaced_\d{8}_'
        r'\d{6}',
        ok=True),
    Case(
        'overwrite_and_resume',
        'tools/train.py --overwrite-checkpoints --resume',
        overwrite_with_a_shorter_plan('--resume'),
        r'--resume continues the run in the work dir and '
        r'--overwrite-checkpoints .* replaces it with a new one: give one '
        r'of them'),
    # ---- a run's config record never replaced
    Case(
        'test_py_keeps_the_training_record',
        'tools/train.py CFG --cfg-options randomness.seed=3, then '
        'tools/test.py CFG WD/iter_2.pth with the same work dir',
        run_test_py_in_the_training_work_dir,
        r'record\.py records another run of this config \(other options\)'
        r"; kept as it is\. This run's config: "
        r'\S+/\d{8}_\d{6}(_\d+)?/record\.py',
        ok=True),
    Case(
        'mmseg_train_refused_keeps_the_record',
        "mmseg's own tools/train.py CFG --work-dir WD --cfg-options "
        'randomness.seed=5, WD holding an earlier run',
        mmseg_train_refused_in_a_used_work_dir,
        r'records another run of this config.*holds checkpoints of an '
        r'earlier run',
        traceback_ok=True),
    # ---- data loss 2: two runs in one work dir
    Case('second_run_in_locked_work_dir',
         'tools/train.py --work-dir WD while another run holds WD',
         train_in_locked_work_dir,
         r'The work dir \S+ is in use by another training run \(pid PID: '),
    Case(
        'mmseg_train_in_locked_work_dir',
        "mmseg's own tools/train.py in the work dir of a live run",
        mmseg_train_in_locked_work_dir,
        r'is in use by another training run \(pid PID',
        traceback_ok=True),
    Case(
        'lock_of_killed_run_with_live_workers',
        'a resume right after kill -9 while its dataloader workers live',
        take_over_lock_of_killed_run_with_live_workers,
        rf'^pid {os.getpid()}: ',
        ok=True),
    Case(
        'stale_lock_taken_over',
        'a run in a work dir whose previous run was killed with -9',
        take_over_stale_lock,
        rf'^pid {os.getpid()}: ',
        ok=True),
]


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_bad_input(bad_input_ctx, case):
    run_case(bad_input_ctx, case)
