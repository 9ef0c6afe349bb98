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
    ``path``.

    Args:
        path (str): the file to write.
        write (Callable[[str], None]): writes the content to the path given.

    Returns:
        str: ``path``.
    """
    folder, name = osp.split(osp.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=folder, prefix=f'.{name}.', suffix=f'.tmp{osp.splitext(name)[1]}')
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


def check_writable(path: str, what: str = 'output') -> None:
    """Prove that ``path`` (a file or folder to be written, which need not
    exist) can be written, by writing: a temporary file is created and
    removed in its nearest existing folder. ``os.access`` is not proof
    (root passes it for ``/proc``, a read-only mount or a full disk).

    Args:
        path (str): the output.
        what (str): its name in the message.

    Raises:
        ValueError: naming the folder, the reason and the fix.
    """
    folder = osp.abspath(osp.expanduser(os.fspath(path)))
    if not osp.isdir(folder):
        folder = osp.dirname(folder)
    while not osp.lexists(folder):
        folder = osp.dirname(folder)
    if not osp.isdir(folder):
        raise ValueError(f'the {what} {path} cannot be written: {folder} '
                         'is a file, not a folder. Give another path.')
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix='.write-probe.')
        os.close(fd)
        os.remove(probe)
    except OSError as err:
        raise ValueError(
            f'the {what} {path} cannot be written: creating a file in '
            f'{folder} failed ({err.strerror or err}). Give a path you can '
            'write to.') from None


def same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (real paths, or one
    inode: symlinks and hard links).

    Args:
        a (str): a path.
        b (str): another path.

    Returns:
        bool: whether they name one file.
    """
    if osp.realpath(a) == osp.realpath(b):
        return True
    try:
        return osp.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (real paths).

    Args:
        path (str): a path (need not exist).
        folder (str): a folder.

    Returns:
        bool: whether ``path`` is in ``folder``'s tree.
    """
    path, folder = osp.realpath(path), osp.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_output_file(out: str,
                      inputs: Mapping[str, Optional[str]],
                      example: str,
                      force: bool = False) -> None:
    """Refuse an output file that is one of the command's inputs (writing
    it would replace that file), lies inside an input folder, is a
    directory, or exists (unless ``force``: every tool's ``--force``),
    before any work is done.

    Args:
        out (str): the file the command will write.
        inputs (Mapping[str, str | None]): ``{what: path}`` of its inputs,
            e.g. ``{'checkpoint': ..., 'config': ...}``.
        example (str): a good output name for the message.
        force (bool): an existing output file may be replaced (never an
            input).

    Raises:
        ValueError: naming the input, or the existing file, and the fix.
    """
    for what, path in inputs.items():
        if path and same_file(out, path):
            raise ValueError(
                f'the output {out} is the {what} {path} '
                f'({osp.realpath(path)}); writing it would replace that '
                f'file. Give the output another name, e.g. {example}.')
    check_output_dir(out, {
        what: path
        for what, path in inputs.items() if path and osp.isdir(path)
    }, example)
    if osp.isdir(out):
        raise ValueError(f'the output {out} is a directory; give a file '
                         f'name, e.g. {example}.')
    check_output_exists(out, example, force)
    check_writable(out)


def check_output_exists(out: str, example: str, force: bool = False) -> None:
    """Refuse an output file that exists, unless ``force`` (every tool's
    ``--force``): the last of the output checks (a tool that checks its
    output against inputs in several steps calls it after them).

    Args:
        out (str): the file the command will write.
        example (str): a good output name for the message.
        force (bool): it may be replaced.

    Raises:
        ValueError: naming the file and the fix.
    """
    if not force and osp.lexists(out):
        raise ValueError(
            f'the output {out} exists; writing it would replace that file. '
            f'Give another name (e.g. {example}), or --force to replace '
            'it.')


def check_output_dir(out: str, folders: Mapping[str, Optional[str]],
                     example: str) -> None:
    """Refuse an output (a folder, or a file) that is, or lies inside, a
    folder the command reads (e.g. ``tools/test.py --out
    DATA/SegmentationClass`` would write predictions over the ground
    truth), before any work.

    Args:
        out (str): the folder (or file) the command will write.
        folders (Mapping[str, str | None]): ``{what: folder}`` it reads.
        example (str): a good output folder for the message.

    Raises:
        ValueError: naming the folder and the fix.
    """
    for what, folder in folders.items():
        if folder and inside(out, folder):
            raise ValueError(
                f'the output {out} is or lies inside the {what} {folder}, '
                'which the command reads; its files could be replaced. '
                f'Write elsewhere, e.g. {example}.')


def dataset_folders(dataset_cfg) -> dict:
    """``{what: folder}`` of every image / label folder a dataset config
    reads (``data_root`` joined with each ``data_prefix`` entry; the root
    itself without one), through wrappers (``dataset=``, ``datasets=``).

    Args:
        dataset_cfg (dict): a dataset config.

    Returns:
        dict: e.g. ``{'img_path folder': 'data/toy/JPEGImages', ...}``.
    """
    found = {}
    if not isinstance(dataset_cfg, Mapping):
        return found
    for inner in ([dataset_cfg.get('dataset')] +
                  list(dataset_cfg.get('datasets') or [])):
        found.update(dataset_folders(inner))
    root = dataset_cfg.get('data_root')
    prefixes = {
        k: v
        for k, v in (dataset_cfg.get('data_prefix') or {}).items() if v
    }
    if root is not None or prefixes:
        for key, prefix in prefixes.items():
            found[f'dataset {key} folder'] = osp.join(root or '', prefix)
        if not prefixes and root:
            found['dataset root'] = root
    return found


def register_atomic_local_backend() -> None:
    """Make mmengine write every local file it ``put``\\ s atomically
    (:func:`atomic_write`): checkpoints of every stage, as
    ``CheckpointHook`` saves them through the file backend. A run killed
    while saving, or a full disk, leaves no partial ``iter_N.pth`` and the
    earlier checkpoints (and ``last_checkpoint``) as they were; a failed
    write says so. (Safe against a killed process, not a power cut: the
    file is not fsync'ed.)"""
    from mmengine.fileio.backends import LocalBackend, register_backend

    class AtomicLocalBackend(LocalBackend):
        """mmengine's ``LocalBackend`` with atomic ``put`` / ``put_text``."""

        def put(self, obj: bytes, filepath) -> None:
            _put_atomic(str(filepath), obj, 'wb', None)

        def put_text(self,
                     obj: str,
                     filepath,
                     encoding: str = 'utf-8') -> None:
            _put_atomic(str(filepath), obj, 'w', encoding)

    register_backend('local', AtomicLocalBackend, force=True, prefixes='')


def _put_atomic(path: str, data, mode: str, encoding: Optional[str]) -> None:
    """Write ``data`` to ``path`` atomically; an OSError (a full disk, a
    file-size limit) names the file and says the earlier ones are intact."""

    def write(tmp: str) -> None:
        with open(tmp, mode, encoding=encoding) as f:
            f.write(data)

    try:
        atomic_write(path, write)
    except OSError as err:
        raise OSError(
            err.errno, f'Could not write {path} ({err.strerror or err}); '
            'nothing was written in its place and the earlier checkpoints '
            f'in {osp.dirname(path)} are intact: free some space (or raise '
            'the file-size limit) and continue with --resume.') from err
