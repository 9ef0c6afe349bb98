"""SIGNStageHook: moved. Since issue 40 the SIGN stage plan is the training
loop's (``train_cfg = dict(type='StagePlanTrainLoop', stages=[...])``,
:class:`~mmseg_sign.engine.runner.StagePlanTrainLoop`); the name stays
registered so that a config written before says where the plan went."""
from typing import List, Optional

from mmengine.hooks import Hook

from mmseg.registry import HOOKS
from ...structures.stage_plan import moved_message


@HOOKS.register_module()
class SIGNStageHook(Hook):
    """Raises, showing the plan in its new home, ``train_cfg.stages``.

    Args:
        stages (list[dict], optional): the plan of an old config.
        **kwargs: the old hook's other arguments (``val_at_stage_end``,
            now ``train_cfg.val_at_stage_end``).
    """

    def __init__(self, stages: Optional[List[dict]] = None, **kwargs):
        raise ValueError(moved_message(stages or [], 'SIGNStageHook'))
