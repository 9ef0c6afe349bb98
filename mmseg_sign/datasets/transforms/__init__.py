from .paper_eval import PaperEvalResize
from .zero_shot import (CheckedLoadAnnotations, CheckSegLabels,
                        MaskUnseenClasses)

__all__ = [
    "CheckedLoadAnnotations", "CheckSegLabels", "MaskUnseenClasses",
    "PaperEvalResize"
]
