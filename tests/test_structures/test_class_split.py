"""The class split (:mod:`mmseg_sign.structures.class_split`): resolved
from names or indices, read back from a checkpoint."""
import pytest
import torch

from mmseg_sign.structures import ClassSplit


def test_class_split_resolves_and_reads_checkpoints():
    classes = ('a', 'b', 'c', 'd')
    split = ClassSplit.resolve(classes, unseen=[3, 'b'])
    assert split.unseen == ('b', 'd') and split.seen == ('a', 'c')
    assert split.unseen_ids == [1, 3] and split.same_as(['d', 'b'])
    mask = torch.tensor([False, True, False, True])
    ckpt = dict(
        state_dict={'module.decode_head.unseen_mask': mask},
        meta=dict(dataset_meta=dict(classes=classes)))
    assert ClassSplit.from_checkpoint(ckpt) == split
    assert ClassSplit.from_checkpoint(dict(state_dict={})) is None
    with pytest.raises(ValueError, match='both seen and unseen'):
        ClassSplit.resolve(classes, seen=['a', 'b'], unseen=['b'])
