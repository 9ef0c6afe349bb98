"""engine/checkpoint_checks.py: a checkpoint trained on other classes than
the test data (same count) is a mismatch naming the first difference
(tools/test.py and unseen_confusion scored a toy model on CamVid
under CamVid's names)."""
from model_utils import tiny_model

from mmseg_sign.engine.checkpoint_checks import checkpoint_mismatches


def _checkpoint(model, classes):
    return dict(
        state_dict=model.state_dict(),
        meta=dict(dataset_meta=dict(classes=tuple(classes))))


def test_class_names_are_compared(embedding_table):
    path, names = embedding_table
    model = tiny_model(path)
    assert checkpoint_mismatches(model, _checkpoint(model, names), names) == []
    # mmseg's ADE20K names carry spaces ('bed '): compared stripped
    assert checkpoint_mismatches(model,
                                 _checkpoint(model, [n + ' ' for n in names]),
                                 names) == []
    other = ['sky', 'c1', 'road', 'c3', 'c4']
    (problem, ) = checkpoint_mismatches(model, _checkpoint(model, other),
                                        names)
    assert problem == (
        "the checkpoint was trained on other classes than the test "
        "dataset's (2 of 5 differ; first: #0 'sky' vs 'c0'): its "
        'predictions would be scored under the wrong names')
    (problem, ) = checkpoint_mismatches(model, _checkpoint(model, names[:4]),
                                        names)
    assert problem == ('the checkpoint was trained on 4 classes, the test '
                       'dataset has 5')
