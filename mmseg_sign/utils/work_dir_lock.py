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
import logging
import os
import os.path as osp
import re
import sys
import time
from typing import Optional

from mmengine.logging import print_log

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
    try:
        lock_file = open(path, 'a+')
    except OSError as err:  # a read-only work dir, a folder of that name
        raise ValueError(
            f'the work dir {work_dir} cannot hold the run\'s lock file '
            f'{path} ({err.strerror or err}): a run writes its lock, logs '
            'and checkpoints there. Give a --work-dir this user can write '
            'to, or make this one writable (chmod u+w).') from None
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


def work_dir_holder(work_dir: str) -> Optional[str]:
    """The ``pid N: command`` of the live process that holds
    ``work_dir``'s lock, read from its lock file without taking the lock
    (taking it, even for an instant, could fail a run starting then);
    None where no lock file names a live process.

    Args:
        work_dir (str): a run's work dir.

    Returns:
        str | None: the holder's line.
    """
    try:
        with open(osp.join(work_dir, LOCK_NAME)) as f:
            line = f.readline().strip()
    except OSError:
        return None
    found = re.match(r'pid (\d+):', line)
    if not found:
        return None
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:  # left by a run killed with -9
        return None
    except PermissionError:  # alive, another user's
        pass
    return line


@atexit.register
def _release_all() -> None:
    for key in list(_held):
        unlock_work_dir(key)


def config_dump_target(config_file: Optional[str],
                       work_dir: str) -> Optional[str]:
    """The file mmengine's Runner writes the resolved config to
    (``WORK_DIR/basename(config)``, in ``Runner.__init__``), if that is the
    config file itself.

    Args:
        config_file (str, optional): the config a command was given.
        work_dir (str): its work dir.

    Returns:
        str | None: the config's path where the dump would replace it.
    """
    if not config_file:
        return None
    target = osp.join(work_dir, osp.basename(config_file))
    if osp.exists(target) and osp.samefile(target, config_file):
        return config_file
    return None


def check_work_dir(work_dir) -> None:
    """The work dir can be made (or exists as a folder) before a Runner
    writes into it: an empty name, a file, or a place that cannot hold a
    folder (``/proc/x``, a read-only disk) is an error naming it, not
    mmengine's ``FileNotFoundError`` halfway through its setup.

    Args:
        work_dir (str): the command's work dir.

    Raises:
        ValueError: naming the path, the reason and the fix.
    """
    if not isinstance(work_dir, str) or not work_dir.strip():
        raise ValueError(
            f'--work-dir {work_dir!r}: a work dir is a folder path (e.g. '
            '--work-dir work_dirs/run1); leave --work-dir out for '
            'work_dirs/CONFIG_NAME.')
    try:
        os.makedirs(work_dir, exist_ok=True)
    except OSError as err:
        raise ValueError(
            f'--work-dir {work_dir}: cannot make the folder '
            f'({err.strerror or err}); give a writable folder path.') from None


def check_config_dump(config_file: Optional[str], work_dir: str) -> None:
    """Refuse a work dir that holds the command's own config file: mmengine
    writes the resolved config over it (its ``_base_`` and comments gone,
    this run's options baked in).

    Args:
        config_file (str, optional): the config a command was given.
        work_dir (str): its work dir.

    Raises:
        ValueError: naming the file and the fix.
    """
    target = config_dump_target(config_file, work_dir)
    if target is not None:
        raise ValueError(
            f'the work dir {work_dir} holds the config {target} itself: '
            "mmengine's Runner writes the resolved config to "
            f'{osp.join(work_dir, osp.basename(target))}, which would replace '
            'yours (its _base_ and comments gone). Give another --work-dir, '
            'or keep the config outside the work dir.')


#: the (work dir, load_from, resume) this process has checked: the tools
#: check before building the Runner (a clean error), WorkDirLockHook again
#: for every other entry point
_resume_checked = set()


def check_resume_source(work_dir: str,
                        load_from: Optional[str],
                        resume: bool,
                        overwrite: bool = False,
                        config_file: Optional[str] = None) -> None:
    """The checkpoints a run would write over, refused before it starts:

    * a run without ``--resume`` in a work dir that holds checkpoints (of
      an earlier or crashed run): mmengine names checkpoints by iteration,
      so the new run's ``iter_N.pth`` and ``last_checkpoint`` replace the
      old ones without a word. Allowed with ``overwrite``
      (``tools/train.py --overwrite-checkpoints``, or ``--cfg-options
      overwrite_checkpoints=True`` with mmseg's tools);
    * ``--resume`` with a ``load_from`` outside the work dir, in a work dir
      that holds checkpoints: mmengine resumes ``load_from`` (its rule) and
      its next checkpoints replace the work dir's own ``iter_N.pth``.

    mmengine's other rules are kept: ``--resume`` alone continues the work
    dir's own run (``last_checkpoint``), and ``--resume`` with another run's
    checkpoint into an empty work dir continues that run there (nothing of
    the work dir's is overwritten).

    Args:
        work_dir (str): the run's work dir.
        load_from (str, optional): ``cfg.load_from``.
        resume (bool): ``cfg.resume``.
        overwrite (bool): ``cfg.overwrite_checkpoints``: a new run may
            replace the work dir's checkpoints.
        config_file (str, optional): the run's config: with ``overwrite``,
            the old run's record of it is set aside with its checkpoints.

    Raises:
        ValueError: naming the checkpoints and the fixes.
    """
    checked = (osp.realpath(work_dir), str(load_from), bool(resume),
               bool(overwrite))
    if checked in _resume_checked:  # this process checked it already
        return
    _check_resume_source(work_dir, load_from, resume, overwrite, config_file)
    _resume_checked.add(checked)


def work_dir_checkpoints(work_dir: str) -> list:
    """The checkpoints a work dir holds (``*.pth`` and ``last_checkpoint``
    at its top level), in name order.

    Args:
        work_dir (str): a work dir (need not exist).

    Returns:
        list[str]: file names.
    """
    if not osp.isdir(work_dir):
        return []
    return sorted(
        n for n in os.listdir(work_dir)
        if n.endswith('.pth') or n == 'last_checkpoint')


def _check_resume_source(work_dir: str,
                         load_from: Optional[str],
                         resume: bool,
                         overwrite: bool,
                         config_file: Optional[str] = None) -> None:
    if resume and overwrite:
        raise ValueError(
            '--resume continues the run in the work dir and '
            '--overwrite-checkpoints (overwrite_checkpoints=True) replaces '
            'it with a new one: give one of them.')
    if resume and not load_from:
        check_last_checkpoint(work_dir)
    own = [n for n in work_dir_checkpoints(work_dir) if n.endswith('.pth')]
    if not resume and own and overwrite and _rank() == 0:
        set_aside_checkpoints(work_dir, config_file)
        return
    if not resume and own and not overwrite:
        listed = f'{", ".join(own[:3])}{", ..." if len(own) > 3 else ""}'
        raise ValueError(
            f'the work dir {work_dir} holds checkpoints of an earlier run '
            f'({listed}): a new run would write its own over them (mmengine '
            'names checkpoints by iteration). To continue that run, add '
            '--resume; to keep it, give this run another --work-dir; to '
            'train from scratch and replace them, add '
            '--overwrite-checkpoints (with mmseg\'s tools/train.py or mim: '
            '--cfg-options overwrite_checkpoints=True).')
    if not resume or not load_from or '://' in str(load_from):
        return
    inside = osp.realpath(load_from).startswith(
        osp.realpath(work_dir) + os.sep)
    if inside or not own:
        return
    raise ValueError(
        f'--resume with load_from={load_from}, another run\'s checkpoint, '
        f'in the work dir {work_dir}, which holds checkpoints of its own '
        f'({", ".join(own[:3])}{", ..." if len(own) > 3 else ""}): mmengine '
        'would resume load_from and write its next checkpoints over these. '
        'To continue the work dir\'s own run, drop load_from (--resume alone '
        'finds its last checkpoint); to continue the other run, give it an '
        'empty --work-dir; to start a new run from those weights, drop '
        '--resume.')


def set_aside_checkpoints(work_dir: str,
                          config_file: Optional[str] = None) -> str:
    """A new run replaces the work dir's (``--overwrite-checkpoints``): the
    old run's checkpoints and ``last_checkpoint`` move to
    ``WORK_DIR/replaced_TIMESTAMP/``, so that none of them passes for the new
    run's (a shorter plan left the old ``iter_8.pth`` beside the new
    ``iter_2-6.pth``, and "the latest" was the old model)
    and none is lost; so does its record of ``config_file``
    (``WORK_DIR/basename(config_file)``, which the new run's dump would
    replace). Called under the work dir's lock, on rank 0.

    Args:
        work_dir (str): the work dir.
        config_file (str, optional): the new run's config.

    Returns:
        str: the folder they went to.

    Raises:
        ValueError: the work dir cannot be written (naming it and the fix).
    """
    stamp = time.strftime('%Y%m%d_%H%M%S')
    folder = osp.join(work_dir, f'replaced_{stamp}')
    n = 1
    while osp.exists(folder):
        n += 1
        folder = osp.join(work_dir, f'replaced_{stamp}_{n}')
    names = work_dir_checkpoints(work_dir)
    record = osp.basename(config_file) if config_file else None
    if record and osp.isfile(osp.join(work_dir, record)) and \
            config_dump_target(config_file, work_dir) is None:
        names.append(record)
    try:
        os.makedirs(folder)
        for name in names:
            os.replace(osp.join(work_dir, name), osp.join(folder, name))
    except OSError as err:
        raise ValueError(
            f'--overwrite-checkpoints: cannot move the earlier run\'s '
            f'checkpoints in {work_dir} aside to {folder} ('
            f'{err.strerror or err}). Make the work dir writable (chmod '
            'u+w), or give this run another --work-dir.') from None
    print_log(
        f'--overwrite-checkpoints: the earlier run\'s {len(names)} '
        f'checkpoint file(s) ({", ".join(names[:3])}'
        f'{", ..." if len(names) > 3 else ""}) moved to {folder}; '
        'delete it when it is not needed.',
        logger='current')
    return folder


def check_last_checkpoint(work_dir: str) -> None:
    """``--resume`` alone: mmengine resumes the checkpoint that
    ``WORK_DIR/last_checkpoint`` names. An empty or dangling one would fail
    deep in mmengine (or resume nothing); a work dir without one trains from
    iteration 0, which the log now says.

    Args:
        work_dir (str): the run's work dir.

    A ``last_checkpoint`` that names a file outside the work dir (the
    absolute path mmengine wrote, in a copied or moved work dir) is
    pointed at the work dir's own file of that name, and the log says so.

    Raises:
        ValueError: ``last_checkpoint`` is empty, names a missing file, or
            names a file outside the work dir that the work dir lacks.
    """
    path = osp.join(work_dir, 'last_checkpoint')
    if not osp.isfile(path):
        print_log(
            f'--resume: the work dir {work_dir} holds no checkpoint '
            '(no last_checkpoint): nothing to resume, the run starts '
            'at iteration 0.',
            logger='current',
            level=logging.WARNING)
        return
    with open(path) as f:
        named = f.read().strip()
    if named and not osp.realpath(named).startswith(
            osp.realpath(work_dir) + os.sep):
        # a copied or moved work dir: mmengine writes an absolute path, so
        # the copy's last_checkpoint names the original run's file
        own = osp.join(work_dir, osp.basename(named))
        if not osp.isfile(own):
            raise ValueError(
                f'--resume: {path} names {named}, outside this work dir '
                '(a copied or moved work dir), and the work dir holds no '
                f'{osp.basename(named)}: resuming it would continue '
                'another run\'s checkpoint and write this one\'s over. '
                'Resume a checkpoint of this work dir by name (--resume '
                '--cfg-options load_from=WORK_DIR/iter_N.pth), or train '
                'without --resume.')
        with open(path, 'w') as f:
            f.write(own)
        print_log(
            f'--resume: {path} named {named}, outside this work dir (a '
            f'copied or moved work dir); it now names this work dir\'s '
            f'own {own}, which the run resumes.',
            logger='current',
            level=logging.WARNING)
        named = own
    if not named or not osp.isfile(named):
        found = sorted((n for n in os.listdir(work_dir) if n.endswith('.pth')),
                       key=lambda n: [int(d) for d in re.findall(r'\d+', n)])
        raise ValueError(
            f'--resume: {path} ' +
            ('is empty' if not named else f'names {named}, which does not '
             'exist') + ' (a run killed while writing it, or a moved work '
            'dir). ' +
            ('Resume one of its checkpoints by name: --resume '
             '--cfg-options load_from=' + osp.join(work_dir, found[-1])
             if found else 'The work dir holds no checkpoint: train without '
             '--resume.'))
