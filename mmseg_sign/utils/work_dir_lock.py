"""One training run per work dir.

Two runs started with the same ``--work-dir`` would share one timestamp
folder and log, and each would overwrite the other's checkpoints. The run
takes an exclusive lock on ``WORK_DIR/.train.lock`` (which also holds its
pid and command line) for as long as it lives; a second run fails at once
naming the first one's pid. Every training run takes it:
``WorkDirLockHook`` (in the schedule bases' ``default_hooks``) when the
Runner starts, whatever started it (this project's ``tools/train.py``,
mmseg's, ``mim train`` or a Runner built in Python), and this project's
``tools/train.py`` already before it builds the Runner.

The lock is a POSIX record lock (``fcntl.lockf``): the kernel drops it
when the owner exits, however it exits (``kill -9`` too), so a lock file
left by a dead process is simply taken over; and, unlike ``flock``, it is
not inherited by forked children, so dataloader workers that outlive a
killed run for a few seconds do not block its ``--resume``.
"""
import atexit
import fcntl
import os
import os.path as osp
import sys
from typing import Optional

LOCK_NAME = '.train.lock'

_held = {}  # realpath of the work dir -> open lock file


class WorkDirLockedError(RuntimeError):
    """Another live process trains in this work dir."""


def _rank() -> int:
    """This process's global rank from the launcher's environment (0
    without a launcher); read before ``torch.distributed`` starts."""
    for key in ('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'):
        value = os.environ.get(key)
        if value is not None and value.strip().isdigit():
            return int(value)
    return 0


def lock_work_dir(work_dir: str) -> Optional[str]:
    """Lock ``work_dir`` for this process until it exits; return the lock
    file's path (``None`` on a process other than rank 0, which does not
    lock: all ranks of one run share the work dir).

    Raises:
        WorkDirLockedError: another live process holds the lock (the
            message names its pid and command line, and the fix).

    Args:
        work_dir (str): the run's work dir (created if needed).

    Returns:
        str | None: the lock file's path.
    """
    if _rank() != 0:
        return None
    os.makedirs(work_dir, exist_ok=True)
    key = osp.realpath(work_dir)
    path = osp.join(key, LOCK_NAME)
    if key in _held:
        return path
    lock_file = open(path, 'a+')
    try:
        fcntl.lockf(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: held by another process
        lock_file.seek(0)
        owner = lock_file.read().strip() or 'another process'
        lock_file.close()
        raise WorkDirLockedError(
            f'The work dir {work_dir} is in use by another training run '
            f'({owner}; lock file {path}). Two runs in one work dir would '
            'share its log and timestamp folder and overwrite each other\'s '
            'checkpoints. Give this run another --work-dir, or wait for '
            'that run to end (or stop it: kill the pid above); a lock left '
            'by a process that has died is taken over '
            'automatically.') from None
    lock_file.seek(0)
    lock_file.truncate()
    lock_file.write(f'pid {os.getpid()}: {" ".join(sys.argv)}\n')
    lock_file.flush()
    _held[key] = lock_file
    return path


def unlock_work_dir(work_dir: str) -> None:
    """Release the lock of :func:`lock_work_dir` (also done at exit).

    Args:
        work_dir (str): a work dir this process locked.
    """
    lock_file = _held.pop(osp.realpath(work_dir), None)
    if lock_file is None:
        return
    try:
        lock_file.seek(0)
        lock_file.truncate()  # no stale pid for the next reader
        fcntl.lockf(lock_file.fileno(), fcntl.LOCK_UN)
    finally:
        lock_file.close()


@atexit.register
def _release_all() -> None:
    for key in list(_held):
        unlock_work_dir(key)
