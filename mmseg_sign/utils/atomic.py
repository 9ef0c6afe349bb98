"""Atomic file writes: every file the project writes for a user (published
checkpoints, class-embedding tables, grown models and configs) goes
through :func:`atomic_write`."""
import os
import os.path as osp
import tempfile
from typing import Callable


def atomic_write(path: str, write: Callable[[str], None]) -> str:
    """Write ``path`` by ``write(tmp)`` on a temporary file beside it, then
    ``os.replace``: a reader (or a crash) never sees a partial file, and a
    failed write leaves the old file as it was. The temporary name keeps
    the extension (``Config.dump`` picks the format from it). Returns
    ``path``."""
    folder, name = osp.split(osp.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f'.{name}.',
                               suffix=f'.tmp{osp.splitext(name)[1]}')
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if osp.exists(tmp):
            os.remove(tmp)
        raise
    return path
