"""StrictCheckpointHook: ``tools/test.py`` refuses a checkpoint that does
not match the model (missing, unexpected or wrong-size weights, another
class count) instead of evaluating random weights."""
from collections.abc import Mapping

from mmengine.hooks import Hook
from mmseg.registry import HOOKS

from ..checkpoint_checks import (  # noqa: F401 (re-exported)
    checkpoint_mismatches, checkpoint_split_mismatch,
    checkpoint_unseen_classes, evaluator_split_mismatches, mismatch_message)


class CheckpointMismatchError(RuntimeError):
    pass


@HOOKS.register_module()
class StrictCheckpointHook(Hook):
    """Checks the checkpoint ``Runner.load_checkpoint`` is about to load
    into the model (``after_load_checkpoint`` runs between reading the file
    and loading it; registered last, it sees the checkpoint as every other
    hook left it) and raises :class:`CheckpointMismatchError` on a
    mismatch, on every process.

    Args:
        checkpoint_path (str): the checkpoint, for the messages.
        config_path (str): the config, for the messages.
        check_weights (bool): the weights fit the model exactly.
        check_split (bool): the seen / unseen split is the checkpoint's.
        flags_of (str): the tool whose ``--lenient-load`` /
            ``--allow-split-change`` the messages offer ('' : the one
            running).
    """

    def __init__(self,
                 checkpoint_path: str,
                 config_path: str,
                 check_weights: bool = True,
                 check_split: bool = True,
                 flags_of: str = ''):
        self.checkpoint_path = checkpoint_path
        self.config_path = config_path
        self.check_weights = check_weights
        self.check_split = check_split
        self.flags_of = f' to {flags_of}' if flags_of else ''

    def after_load_checkpoint(self, runner, checkpoint) -> None:
        classes = None
        loop = getattr(runner, '_test_loop', None)
        dataset = getattr(getattr(loop, 'dataloader', None), 'dataset', None)
        metainfo = getattr(dataset, 'metainfo', None)
        if isinstance(metainfo, Mapping):
            classes = metainfo.get('classes')
        if self.check_weights:
            self._check_weights(runner, checkpoint, classes)
        if self.check_split:
            problem = checkpoint_split_mismatch(checkpoint, metainfo)
            if problem:
                raise CheckpointMismatchError(
                    f'The checkpoint {self.checkpoint_path} was trained on '
                    f'another seen/unseen split than the test dataset of '
                    f'{self.config_path}: {problem}. The model would be '
                    'scored with classes it was trained on counted as '
                    'unseen (or the reverse). Test with the split it was '
                    'trained with (the same metainfo=dict(unseen_classes='
                    '...) as in training), or pass --allow-split-change'
                    f'{self.flags_of} for a deliberate cross-split study.')
            problems = evaluator_split_mismatches(
                checkpoint, metainfo, getattr(loop, 'evaluator', None))
            if problems:
                raise CheckpointMismatchError(
                    f'The metric of {self.config_path} is given another '
                    f'seen/unseen split than the checkpoint '
                    f'{self.checkpoint_path} was trained with: ' +
                    '; '.join(problems) + '. Its seen, unseen and '
                    'harmonic mIoU would be those of a split the model was '
                    'not trained for. The split has one home, the '
                    "dataset's metainfo (and the checkpoint); drop the "
                    "metric's seen_classes / unseen_classes, or pass "
                    f'--allow-split-change{self.flags_of} for a deliberate '
                    'cross-split '
                    'study (then set the same split on '
                    'test_dataloader.dataset.metainfo).')

    def _check_weights(self, runner, checkpoint, classes) -> None:
        problems = checkpoint_mismatches(runner.model, checkpoint, classes)
        if not problems:
            return
        raise CheckpointMismatchError(
            mismatch_message(self.checkpoint_path, self.config_path,
                             checkpoint, problems) +
            f', or pass --lenient-load{self.flags_of} to evaluate anyway '
            "with mmengine's lenient load (weights it cannot load keep their "
            'random initialisation, so the scores are meaningless).')
