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
import sys

from mmseg_sign.apis.publish import process_checkpoint
from mmseg_sign.utils.checkpoint import (UnreadableCheckpointError,
                                         UnsafeCheckpointError,
                                         register_checkpoint_safe_globals)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description='Strip a SIGN checkpoint for publishing (inference '
        'weights + meta) and name it after its sha256')
    parser.add_argument('in_file', help='input checkpoint filename')
    parser.add_argument('out_file', help='output checkpoint filename')
    parser.add_argument(
        '--no-hash',
        action='store_true',
        help='write OUT as given, without the -<sha256[:8]> suffix')
    parser.add_argument(
        '--force',
        action='store_true',
        help='replace the output file if it exists')
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    register_checkpoint_safe_globals()  # what mmengine checkpoints hold
    try:
        process_checkpoint(args.in_file, args.out_file, not args.no_hash,
                           args.force)
    except (FileNotFoundError, UnsafeCheckpointError,
            UnreadableCheckpointError, ValueError) as err:
        sys.exit(f'tools/publish_model.py: error: {err}')


if __name__ == '__main__':
    main()
