"""Reading what mmengine logged in a work dir."""
import json
import os
import os.path as osp


def logged_records(work_dir: str, key: str) -> dict:
    """The records of the run's ``vis_data/scalars.json`` files (one per
    ``tools/train.py`` start, resumes included) that hold ``key``.

    Args:
        work_dir (str): the run's work dir.
        key (str): a logged name, e.g. ``'hIoU'`` or ``'loss_kld'``.

    Returns:
        dict[int, dict]: ``{step: record}``; a later file's record wins.
    """
    out = {}
    for root, _, files in sorted(os.walk(work_dir)):
        if 'scalars.json' in files:
            with open(osp.join(root, 'scalars.json')) as f:
                for line in f:
                    record = json.loads(line)
                    if key in record:
                        out[record['step']] = record
    return out
