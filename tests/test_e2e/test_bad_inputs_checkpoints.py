"""Bad inputs, checkpoints: hostile, damaged, published or of another model,
resumed or loaded: each case is what a user does and the clear error (or
correct behaviour) it must get, run by ``test_bad_input`` (shared context
and helpers: ``tests/bad_input_utils.py``; every case is listed in
docs/robustness.md)."""
import pytest
from bad_input_utils import (DAMAGED, ONE_PLACE_SPLIT, Case, load_published,
                             publish_damaged, publish_hostile, publish_normal,
                             resume_published, resume_with, run_case,
                             run_test_py_on_damaged,
                             run_test_py_on_plain_pickle, score_other_classes,
                             score_with_another_table)

# every test here starts a tool process or trains a run
pytestmark = pytest.mark.slow

CASES = [
    # ---- code execution
    Case(
        'publish_hostile_checkpoint',
        'tools/publish_model.py on a checkpoint whose meta carries an '
        'os.system payload', publish_hostile,
        r'Cannot load the checkpoint \S*evil\.pth safely: .*posix\.system'),
    Case(
        'test_plain_hostile_pickle',
        'tools/test.py on a plain pickle whose payload runs os.system',
        run_test_py_on_plain_pickle,
        r'Cannot load the checkpoint \S*evil_plain\.pth safely: a plain '
        r'pickle \(not a torch zip checkpoint\) that imports posix\.system'),
    Case(
        'publish_normal_checkpoint',
        'tools/publish_model.py on a real training checkpoint (control)',
        publish_normal,
        '',
        ok=True),
    # ---- obscure: damaged checkpoints
    Case('publish_empty_checkpoint', 'tools/publish_model.py on a 0-byte '
         'file', publish_damaged('empty'), DAMAGED.format('empty', 'empty')),
    Case('publish_truncated_checkpoint', 'tools/publish_model.py on half '
         'a checkpoint', publish_damaged('truncated'),
         DAMAGED.format('truncated', 'truncated')),
    Case('test_empty_checkpoint', 'tools/test.py CONFIG empty.pth',
         run_test_py_on_damaged('empty'), DAMAGED.format('empty', 'empty')),
    Case('test_truncated_checkpoint', 'tools/test.py CONFIG truncated.pth',
         run_test_py_on_damaged('truncated'),
         DAMAGED.format('truncated', 'truncated')),
    # ---- silently wrong 4: --resume after the split changed
    Case(
        'resume_after_split_change',
        'tools/train.py --resume after setting another split in all '
        'three loaders',
        resume_with(ONE_PLACE_SPLIT),
        r"--resume: the checkpoint was trained with the unseen "
        r"classes \('flag', 'hedge', 'river'\), but the training dataset "
        r"now has \('kite', 'lamp', 'river'\); the model has learnt "
        r"\('kite', 'lamp'\) from their labels.*allow_split_change=True",
        traceback_ok=True),
    # ---- silently wrong 3: load_from a checkpoint without G and D
    Case(
        'load_published_into_transfer',
        'tools/train.py, plan transfer + self_train, load_from a '
        'published checkpoint',
        load_published(False),
        r'no weights for decode_head\.discriminator and '
        r'decode_head\.generator \(a published checkpoint.*stages\[0\] '
        r'\(transfer\) uses discriminator and generator.*'
        r'allow_untrained_gan=True',
        traceback_ok=True),
    Case(
        'load_published_deliberately',
        'the same with --cfg-options allow_untrained_gan=True (runs)',
        load_published(True),
        r'Iter\(train\) \[3/3\]',
        ok=True),
    # ---- a published checkpoint resumed; other class names
    Case(
        'resume_published',
        'tools/train.py --resume with load_from a published checkpoint',
        resume_published, r'--resume from \S*p\.pth: a published checkpoint '
        r'\(tools/publish_model\.py\) holds the inference weights only.*'
        r'load_from=PATH without --resume',
        traceback_ok=True),
    Case(
        'test_with_another_class_table',
        'tools/test.py --cfg-options model.decode_head.class_embeddings='
        'OTHER.npz (the toy classes, other vectors)',
        score_with_another_table,
        r'the class-embedding table \S*other\.npz .* is not the table this '
        r'checkpoint was trained with',
        traceback_ok=True),
    Case(
        'test_on_other_classes',
        'tools/test.py --allow-split-change with a checkpoint trained on '
        '10 other classes', score_other_classes,
        r'trained on other classes than the test dataset\'s \(\d+ of 10 '
        r"differ; first: #0 'sky' vs "),
]


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_bad_input(bad_input_ctx, case):
    run_case(bad_input_ctx, case)
