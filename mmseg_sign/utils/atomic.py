"""Atomic file writes: every file the project writes for a user (published
checkpoints, class-embedding tables, grown models and configs) goes
through :func:`atomic_write`."""
import os
import os.path as osp
import tempfile
from typing import Callable, Mapping, Optional


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


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (real paths, or one
    inode: symlinks and hard links)."""
    if osp.realpath(a) == osp.realpath(b):
        return True
    try:
        return osp.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def check_output_file(out: str, inputs: Mapping[str, Optional[str]],
                      example: str) -> None:
    """Refuse an output file that is one of the command's inputs (writing
    it would replace that file) or a directory, before any work is done.

    Args:
        out (str): the file the command will write.
        inputs (Mapping[str, str | None]): ``{what: path}`` of its inputs,
            e.g. ``{'checkpoint': ..., 'config': ...}``.
        example (str): a good output name for the message.

    Raises:
        ValueError: naming the input and the fix.
    """
    for what, path in inputs.items():
        if path and same_file(out, path):
            raise ValueError(
                f'the output {out} is the {what} {path} '
                f'({osp.realpath(path)}); writing it would replace that '
                f'file. Give the output another name, e.g. {example}.')
    if osp.isdir(out):
        raise ValueError(f'the output {out} is a directory; give a file '
                         f'name, e.g. {example}.')
