"""Make a SIGN training checkpoint into a small inference checkpoint.

    python tools/publish_model.py work_dirs/sign_voc/iter_26000.pth \\
        checkpoints/sign_voc.pth
    # -> checkpoints/sign_voc-<first 8 hex digits of its sha256>.pth

Like mmseg's ``tools/misc/publish_model.py``, for SIGN checkpoints. Kept:

* ``state_dict`` without the modules that only training uses: the
  generator G (``decode_head.generator.*``) and D's GAN head
  (``decode_head.discriminator.*``). In the ``'shared_trunk'`` classifier
  layout ``decode_head.trunk`` is part of the classifier C and is kept,
  and so are the class-embedding table (``decode_head.class_embedding``,
  so that no table file is needed for inference) and the split
  (``decode_head.unseen_mask``).
* ``meta``: ``dataset_meta`` (class names, unseen classes, palette),
  ``mmseg_version``, ``mmseg_sign_version``, ``config`` / ``cfg``,
  ``experiment_name``, ``seed``, plus ``sign_inference_only=True`` (the
  strict check of ``tools/test.py`` then does not ask for G and D).

Dropped: ``optimizer``, ``param_schedulers``, ``message_hub``, the
self-training teacher ``sign_teacher`` and everything else. The output
holds only tensors, numbers, strings, lists and dicts, so it loads with
``torch.load(path, weights_only=True)``.

The input is read by the project's one checkpoint loader
(``mmseg_sign.utils.load_checkpoint_file``: ``weights_only=True`` with
the classes mmengine checkpoints hold, so a file carrying code is refused,
never run). The output never replaces the input (compared by real path and
inode, also after the hash is appended) and is written atomically: a
temporary file in OUT's folder, renamed into place when complete.
"""
import argparse
import io
import os
import os.path as osp
import sys
from collections.abc import Mapping
from hashlib import sha256

import torch

from mmseg_sign.utils.atomic import atomic_write
from mmseg_sign.utils.state_dict import strip_module_prefix
from mmseg_sign.utils.checkpoint import (UnreadableCheckpointError,
                                         UnsafeCheckpointError,
                                         load_checkpoint_file,
                                         register_checkpoint_safe_globals)

# modules that inference does not run (G; D's GAN head)
TRAINING_ONLY_PREFIXES = ('decode_head.generator.',
                          'decode_head.discriminator.')
KEPT_META = ('dataset_meta', 'mmseg_version', 'mmseg_sign_version',
             'mmengine_version', 'config', 'cfg', 'experiment_name', 'seed',
             'time', 'epoch', 'iter')
INFERENCE_ONLY = 'sign_inference_only'


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Strip a SIGN checkpoint for publishing (inference '
        'weights + meta) and name it after its sha256')
    parser.add_argument('in_file', help='input checkpoint filename')
    parser.add_argument('out_file', help='output checkpoint filename')
    parser.add_argument(
        '--no-hash', action='store_true',
        help='write OUT as given, without the -<sha256[:8]> suffix')
    return parser.parse_args(argv)


def _plain(value):
    """``value`` with only types ``torch.load(weights_only=True)`` reads
    (numpy scalars / arrays become Python numbers / lists, tuples lists,
    anything else its string)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.Tensor):
        return value
    if hasattr(value, 'tolist'):  # numpy scalars and arrays
        return _plain(value.tolist())
    return str(value)


def strip_checkpoint(checkpoint: Mapping) -> dict:
    """The published form of a SIGN training checkpoint (module
    docstring)."""
    if not isinstance(checkpoint, Mapping):
        raise ValueError(f'the checkpoint is a {type(checkpoint).__name__},'
                         ' not a dict')
    state = checkpoint.get('state_dict', checkpoint)
    if not isinstance(state, Mapping) or not all(
            isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError('the checkpoint has no state_dict of tensors')
    kept = {}
    for name, value in strip_module_prefix(state).items():
        if name.startswith(TRAINING_ONLY_PREFIXES):
            continue
        kept[name] = value.detach().cpu().clone()
    if not any(k.startswith('decode_head.conv_seg.') for k in kept):
        raise ValueError('no decode_head.conv_seg weights: not a SIGN '
                         'segmentor checkpoint')
    meta = checkpoint.get('meta') if 'state_dict' in checkpoint else None
    meta = meta if isinstance(meta, Mapping) else {}
    out_meta = {k: _plain(meta[k]) for k in KEPT_META if k in meta}
    out_meta[INFERENCE_ONLY] = True
    return dict(state_dict=kept, meta=out_meta)


def _size(path: str) -> str:
    return f'{os.path.getsize(path) / 2**20:.2f} MiB'


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (real paths, or one
    inode: symlinks and hard links)."""
    if osp.realpath(a) == osp.realpath(b):
        return True
    try:
        return osp.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def _check_output(in_file: str, out_file: str) -> None:
    """OUT must not be the input nor a directory."""
    if _same_file(in_file, out_file):
        raise ValueError(
            f'the output {out_file} is the input checkpoint {in_file} '
            f'({osp.realpath(in_file)}); publishing would replace it. Give '
            'the output another name, e.g. checkpoints/NAME.pth.')
    if osp.isdir(out_file):
        raise ValueError(f'the output {out_file} is a directory; give a '
                         'file name, e.g. checkpoints/NAME.pth.')


def process_checkpoint(in_file: str, out_file: str,
                       add_hash: bool = True) -> str:
    """Write the published checkpoint; return its final path.

    Raises ``FileNotFoundError``, ``UnsafeCheckpointError``,
    ``UnreadableCheckpointError`` (the input) or ``ValueError`` (not a SIGN
    checkpoint, or an output that would replace the input), each naming
    the file, before anything is written.
    """
    _check_output(in_file, out_file)
    checkpoint = load_checkpoint_file(in_file, map_location='cpu')
    try:
        published = strip_checkpoint(checkpoint)
    except ValueError as err:
        raise ValueError(f'{in_file}: {err}') from None
    buffer = io.BytesIO()
    torch.save(published, buffer)
    data = buffer.getvalue()
    final_file = out_file
    if add_hash:
        stem = out_file[:-4] if out_file.endswith('.pth') else out_file
        final_file = f'{stem}-{sha256(data).hexdigest()[:8]}.pth'
        _check_output(in_file, final_file)

    def write(tmp):
        with open(tmp, 'wb') as f:
            f.write(data)

    atomic_write(final_file, write)
    print(f'{in_file}: {_size(in_file)}, '
          f'{len(checkpoint.get("state_dict", checkpoint))} tensors')
    print(f'{final_file}: {_size(final_file)}, '
          f'{len(published["state_dict"])} tensors')
    print(final_file)
    return final_file


def main(argv=None):
    args = parse_args(argv)
    register_checkpoint_safe_globals()  # what mmengine checkpoints hold
    try:
        process_checkpoint(args.in_file, args.out_file, not args.no_hash)
    except (FileNotFoundError, UnsafeCheckpointError,
            UnreadableCheckpointError, ValueError) as err:
        sys.exit(f'tools/publish_model.py: error: {err}')


if __name__ == '__main__':
    main()
