"""utils/work_dir_lock.py's checks of the checkpoints a run would write
over (check_resume_source), on hand-made work dirs; the same cases through
tools/train.py and mmseg's tool: tests/test_e2e/test_output_guard.py."""
import os
import os.path as osp
import time

import pytest

from mmseg_sign.utils import work_dir_lock
from mmseg_sign.utils.work_dir_lock import (check_resume_source,
                                            work_dir_checkpoints)


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch):
    # the function remembers what this process checked; each case anew
    monkeypatch.setattr(work_dir_lock, '_resume_checked', set())


def _work_dir(tmp_path, *names):
    wd = tmp_path / 'wd'
    wd.mkdir(parents=True)
    for name in names:
        (wd / name).write_text('x')
    (wd / '20261126_000000').mkdir()  # a log folder: not a checkpoint
    return str(wd)


def test_checkpoints_are_pth_files_and_last_checkpoint(tmp_path):
    wd = _work_dir(tmp_path, 'iter_4.pth', 'last_checkpoint', 'cfg.py',
                   'best_mIoU_iter_2.pth', 'scalars.json')
    assert work_dir_checkpoints(wd) == [
        'best_mIoU_iter_2.pth', 'iter_4.pth', 'last_checkpoint'
    ]
    assert work_dir_checkpoints(str(tmp_path / 'missing')) == []


@pytest.mark.parametrize('names', [(), ('cfg.py', 'scalars.json')])
def test_a_new_run_in_a_work_dir_without_checkpoints_is_allowed(
        tmp_path, names):
    check_resume_source(_work_dir(tmp_path, *names), None, resume=False)


def test_a_new_run_over_checkpoints_needs_overwrite(tmp_path):
    """Refused without --overwrite-checkpoints; with it the earlier run's
    checkpoints move to WORK_DIR/replaced_TIMESTAMP, so
    none passes for the new run's and none is lost."""
    import os
    for i, load_from in enumerate((None, 'iter_2.pth', 'x.pth')):
        wd = _work_dir(tmp_path / str(i), 'iter_2.pth', 'iter_4.pth',
                       'last_checkpoint')
        if load_from is not None:
            load_from = osp.join(
                wd if load_from == 'iter_2.pth' else str(tmp_path), load_from)
        with pytest.raises(
                ValueError,
                match=(
                    rf'the work dir {wd} holds checkpoints of an earlier run '
                    r'\(iter_2.pth, iter_4.pth\).*--resume.*another --work-dir'
                    r'.*--overwrite-checkpoints.*overwrite_checkpoints=True')):
            check_resume_source(wd, load_from, resume=False)
        check_resume_source(wd, load_from, resume=False, overwrite=True)
        assert work_dir_checkpoints(wd) == []
        moved = [d for d in os.listdir(wd) if d.startswith('replaced_')]
        assert len(moved) == 1 and sorted(os.listdir(osp.join(
            wd, moved[0]))) == ['iter_2.pth', 'iter_4.pth', 'last_checkpoint']
    wd = _work_dir(tmp_path / 'own', 'iter_2.pth', 'iter_4.pth')
    (tmp_path / 'own' / 'wd' /
     'last_checkpoint').write_text(f'{wd}/iter_4.pth')
    check_resume_source(wd, None, resume=True)  # continues its own run


def test_resume_from_another_runs_checkpoint_stays_refused(tmp_path):
    wd = _work_dir(tmp_path, 'iter_2.pth')
    other = str(tmp_path / 'other.pth')
    with pytest.raises(ValueError, match='another run\'s checkpoint'):
        check_resume_source(wd, other, resume=True)
    # with --overwrite-checkpoints too: the two flags contradict (C9)
    with pytest.raises(
            ValueError,
            match='--resume continues the run in the '
            'work dir and --overwrite-checkpoints'):
        check_resume_source(wd, other, resume=True, overwrite=True)
    check_resume_source(wd, f'{wd}/iter_2.pth', resume=True)  # its own


def test_a_copied_work_dir_resumes_its_own_checkpoint(tmp_path):
    """``cp -r WD WD2`` of a killed run, then ``--resume`` in WD2: mmengine's
    last_checkpoint holds WD's absolute path, so WD2 would continue WD's
    checkpoint and write its own over; it resumes its own copy instead,
    and a copy without that file is refused."""
    import shutil
    wd = _work_dir(tmp_path, 'iter_4.pth')
    with open(osp.join(wd, 'last_checkpoint'), 'w') as f:
        f.write(osp.join(wd, 'iter_4.pth'))
    copy = str(tmp_path / 'wd2')
    shutil.copytree(wd, copy)
    check_resume_source(copy, None, True)
    with open(osp.join(copy, 'last_checkpoint')) as f:
        assert f.read() == osp.join(copy, 'iter_4.pth')
    # the original's own record is left alone
    with open(osp.join(wd, 'last_checkpoint')) as f:
        assert f.read() == osp.join(wd, 'iter_4.pth')
    bare = str(tmp_path / 'wd3')
    shutil.copytree(wd, bare)
    (tmp_path / 'wd3' / 'iter_4.pth').unlink()
    with pytest.raises(
            ValueError,
            match=r'names .*wd/iter_4\.pth, outside this work dir .* holds '
            r'no iter_4\.pth'):
        check_resume_source(bare, None, True)


def test_overwriting_sets_the_old_record_of_the_config_aside(tmp_path):
    """--overwrite-checkpoints: the earlier run's record of the config
    (WORK_DIR/CONFIG.py, which the new run's dump replaces) goes with its
    checkpoints; another config's record and the config file itself stay."""
    import os
    wd = _work_dir(tmp_path, 'iter_2.pth', 'last_checkpoint', 'cfg.py',
                   'other.py')
    config = tmp_path / 'configs' / 'cfg.py'
    config.parent.mkdir()
    config.write_text('x = 1')
    check_resume_source(
        wd, None, resume=False, overwrite=True, config_file=str(config))
    moved = [d for d in os.listdir(wd) if d.startswith('replaced_')]
    assert sorted(os.listdir(osp.join(
        wd, moved[0]))) == ['cfg.py', 'iter_2.pth', 'last_checkpoint']
    assert osp.isfile(osp.join(wd, 'other.py'))


def test_a_work_dir_that_cannot_hold_the_lock_is_named(tmp_path):
    """A read-only work dir (or a folder where the lock file goes: the same
    OSError, which root meets too) is a ValueError naming it, not the raw
    OSError; so is a work dir whose checkpoints cannot be moved aside."""
    from mmseg_sign.utils.work_dir_lock import (LOCK_NAME, lock_work_dir,
                                                set_aside_checkpoints)
    wd = tmp_path / 'wd'
    (wd / LOCK_NAME).mkdir(parents=True)
    with pytest.raises(
            ValueError,
            match=rf'the work dir {wd} cannot hold the run.s lock file '
            rf'{wd}/{LOCK_NAME} \(Is a directory\).*--work-dir.*chmod u\+w'):
        lock_work_dir(str(wd))
    # a dangling link where the set-aside folder goes (os.path.exists is
    # False for it, so it is the name chosen, and no folder can be made)
    busy = _work_dir(tmp_path / 'busy', 'iter_2.pth')
    now = time.time()
    for t in (now, now + 1, now + 2):
        stamp = time.strftime('%Y%m%d_%H%M%S', time.localtime(t))
        os.symlink(tmp_path / 'nowhere', osp.join(busy, f'replaced_{stamp}'))
    with pytest.raises(
            ValueError,
            match=r'--overwrite-checkpoints: cannot move the earlier run.s '
            rf'checkpoints in {busy} aside to {busy}/replaced_.*Make the work '
            r'dir writable.*another --work-dir'):
        set_aside_checkpoints(busy)
    assert work_dir_checkpoints(busy) == ['iter_2.pth']  # nothing lost


def test_the_holder_of_a_work_dir_is_read_without_taking_its_lock(tmp_path):
    """work_dir_holder names the live process that holds a work dir's lock
    (toy_table's --dry-run: 'training now'), reads it without locking, and
    says None once the lock is released or its holder has died (a lock
    file left by kill -9)."""
    import subprocess

    from mmseg_sign.utils.work_dir_lock import (LOCK_NAME, lock_work_dir,
                                                unlock_work_dir,
                                                work_dir_holder)
    wd = str(tmp_path / 'wd')
    assert work_dir_holder(wd) is None  # no folder, no lock file
    lock_work_dir(wd)
    try:
        holder = work_dir_holder(wd)
        assert holder.startswith(f'pid {os.getpid()}: ')
        # read, not taken: this process's lock is still the only one
        assert work_dir_holder(wd) == holder
        with open(osp.join(wd, LOCK_NAME)) as f:
            left = f.read().replace(f'pid {os.getpid()}:', 'pid {}:')
    finally:
        unlock_work_dir(wd)
    assert work_dir_holder(wd) is None  # released: the file is emptied
    # the file a killed run leaves: its pid names no live process
    dead = subprocess.Popen(['true'])
    dead.wait()
    stale = tmp_path / 'stale'
    stale.mkdir()
    (stale / LOCK_NAME).write_text(left.format(dead.pid))
    assert work_dir_holder(str(stale)) is None
    (stale / LOCK_NAME).write_text(left.format(os.getppid()))
    assert work_dir_holder(str(stale)) == \
        left.format(os.getppid()).strip()
