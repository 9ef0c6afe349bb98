"""Output directories that never overwrite an input and never mix runs, and
files written atomically (:func:`mmseg_sign.utils.atomic_write`)."""
import os
import os.path as osp
import shutil
from typing import Iterable, Optional, Sequence

from mmengine.runner.checkpoint import save_checkpoint, weights_to_cpu

from ..utils.atomic import atomic_write, check_writable
from ..utils.device import check_device as _check_device


class AddClassesError(ValueError):
    """A problem with the inputs of :func:`add_classes` or
    :func:`save_grown`, found before any work is done; the message says what
    is wrong and how to fix it."""


#: What ``add_classes`` / ``save_grown`` write into an output directory
#: (``self_train`` is the self-training run's work dir).
OWNED = ('config.py', 'model.pth', 'refit.pth', 'class_embeddings.npz',
         'self_train.py', 'self_train')


def _real(path) -> str:
    return osp.realpath(osp.expanduser(os.fspath(path)))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_creatable(out_path: str) -> None:
    """The directory exists, or its nearest existing ancestor is a
    directory this process may write in (so that it can be created)."""
    ancestor = osp.abspath(osp.expanduser(out_path))
    while not osp.lexists(ancestor):
        ancestor = osp.dirname(ancestor)
    if not osp.isdir(ancestor):
        what = 'a broken link' if osp.islink(ancestor) else 'a file'
        raise AddClassesError(
            f'the output directory {out_path} cannot be created: '
            f'{ancestor} is {what}. Give a directory under an existing '
            'directory.')
    try:  # proved by writing (os.access passes /proc for root)
        check_writable(out_path, 'output directory')
    except ValueError as err:
        raise AddClassesError(str(err)) from None


def check_out_dir(out, inputs: Iterable = (), force: bool = False) -> str:
    """Check an output directory before any work: not a file, none of the
    files written there (:data:`OWNED`) is an input or holds one (paths
    compared with ``os.path.realpath``, so through symlinks), and empty
    unless ``force``. Returns its real path.

    Args:
        out (str): the output directory.
        inputs (Iterable[str]): the command's input paths.
        force (bool): allow a non-empty directory.

    Returns:
        str: its real path.

    Raises:
        AddClassesError: naming what is wrong and the fix.
    """
    if out is None or not os.fspath(out):
        raise AddClassesError('the output directory is empty: give one.')
    out_path = os.fspath(out)
    if osp.lexists(out_path) and not osp.isdir(out_path):
        what = 'a broken link' if not osp.exists(out_path) else 'a file'
        raise AddClassesError(
            f'the output directory {out_path} is {what}: give a new '
            'directory (it is created).')
    real = _real(out_path)
    _check_creatable(out_path)
    for given in inputs:
        if given is None:
            continue
        src = _real(given)
        for name in OWNED:
            target = osp.join(real, name)
            if _inside(src, target):
                note = '' if real == osp.abspath(out_path) else \
                    f' ({out_path} is {real})'
                raise AddClassesError(
                    f'the output directory {out_path} would overwrite the '
                    f'input {given}: {osp.join(out_path, name)} is written '
                    f'there{note}. Write to another directory.')
    if osp.isdir(real) and os.listdir(real) and not force:
        present = sorted(set(os.listdir(real)))
        listed = ', '.join(present[:6]) + (', ...' if len(present) > 6 else '')
        raise AddClassesError(
            f'the output directory {out_path} is not empty ({listed}): a '
            'new run there would mix its outputs with the old ones (stale '
            'self-training checkpoints). Give a new directory, or '
            'force=True (tools/add_classes.py: --force) to replace the '
            f'files this tool writes ({", ".join(OWNED)}) and keep the '
            'rest.')
    return real


def clear_owned(out: str) -> None:
    """Remove what :data:`OWNED` names in ``out`` (and temporary files
    left by an interrupted write); keep everything else.

    Args:
        out (str): the output directory.
    """
    if not osp.isdir(out):
        return
    for entry in os.listdir(out):
        path = osp.join(out, entry)
        if entry in OWNED or any(
                entry.startswith(f'.{name}.') for name in OWNED):
            if osp.isdir(path) and not osp.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def input_paths(*groups: Optional[Sequence]) -> list:
    """The file paths among ``groups`` (paths, ``dict(path=...)`` sources;
    objects such as gensim vectors are skipped)."""
    paths = []
    for group in groups:
        if group is None:
            continue
        if isinstance(group, (str, os.PathLike, dict)):
            group = [group]
        for item in group:
            if isinstance(item, dict):
                item = item.get('path')
            if isinstance(item, (str, os.PathLike)) and os.fspath(item):
                paths.append(os.fspath(item))
    return paths


def save_model(model, meta: dict, path: str) -> None:
    """Write an inference checkpoint (``meta`` and the weights, on the
    CPU) atomically.

    Args:
        model (nn.Module): the model.
        meta (dict): the checkpoint's ``meta``.
        path (str): the file.
    """
    ckpt = dict(meta=meta, state_dict=weights_to_cpu(model.state_dict()))
    atomic_write(path, lambda tmp: save_checkpoint(ckpt, tmp))


def check_count(name: str, value) -> None:
    """An iteration count argument is ``None`` or an integer >= 0.

    Args:
        name (str): the argument's name.
        value: its value.

    Raises:
        AddClassesError: naming it.
    """
    if value is not None and (isinstance(value, bool)
                              or not isinstance(value, int) or value < 0):
        raise AddClassesError(f'{name} must be an integer >= 0 (or None), '
                              f'got {value!r}.')


def check_device(device) -> None:
    """:func:`mmseg_sign.utils.device.check_device`, as an
    :class:`AddClassesError`."""
    try:
        _check_device(device)
    except ValueError as err:
        raise AddClassesError(str(err)) from None
