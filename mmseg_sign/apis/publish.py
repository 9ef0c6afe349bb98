"""Make a SIGN training checkpoint into a small inference checkpoint
(``tools/publish_model.py`` is the command line; what is kept and why: its
docstring)."""
import io
import os
from collections.abc import Mapping
from hashlib import sha256

import torch

from ..engine.checkpoint_checks import INFERENCE_UNUSED_PREFIXES
from ..utils.atomic import atomic_write, check_output_file
from ..utils.checkpoint import load_checkpoint_file
from ..utils.state_dict import strip_module_prefix

# modules that inference does not run (G; D's GAN head)
TRAINING_ONLY_PREFIXES = INFERENCE_UNUSED_PREFIXES
KEPT_META = ('dataset_meta', 'mmseg_version', 'mmseg_sign_version',
             'mmengine_version', 'config', 'cfg', 'experiment_name', 'seed',
             'time', 'epoch', 'iter')
INFERENCE_ONLY = 'sign_inference_only'


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
    docstring).

    Args:
        checkpoint (Mapping): a loaded training checkpoint.

    Returns:
        dict: ``state_dict`` (inference weights) and ``meta``.
    """
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


def _check_output(in_file: str, out_file: str, force: bool) -> None:
    """OUT must not be the input nor a directory, nor exist unless
    ``force``."""
    check_output_file(out_file, {'input checkpoint': in_file},
                      'checkpoints/NAME.pth', force)


def process_checkpoint(in_file: str,
                       out_file: str,
                       add_hash: bool = True,
                       force: bool = False) -> str:
    """Write the published checkpoint; return its final path.

    Raises ``FileNotFoundError``, ``UnsafeCheckpointError``,
    ``UnreadableCheckpointError`` (the input) or ``ValueError`` (not a SIGN
    checkpoint, or an output that would replace the input), each naming
    the file, before anything is written.

    Args:
        in_file (str): the training checkpoint.
        out_file (str): the published file (``-<sha256[:8]>`` added before
            the extension when ``add_hash``).
        add_hash (bool): add the hash to the name.
        force (bool): replace an existing output file.
    """
    # with the hash, OUT itself is not written: the final name is checked
    _check_output(in_file, out_file, force or add_hash)
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
        _check_output(in_file, final_file, force)

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
