"""What a SIGN run is made of, each in one home: the seen / unseen split
of the classes (:class:`ClassSplit`) and the stage plan
(:class:`StagePlan`)."""
from .class_split import ClassSplit
from .stage_plan import (STAGE_OPTIONS, STAGE_WRAPPERS, StagePlan,
                         gan_parts_used, required_optim_wrappers,
                         stage_optim_wrappers, stage_options)

__all__ = [
    'ClassSplit', 'StagePlan', 'STAGE_OPTIONS', 'STAGE_WRAPPERS',
    'gan_parts_used', 'required_optim_wrappers', 'stage_optim_wrappers',
    'stage_options'
]
