from .paper_eval import PaperEvalResize
from .zero_shot import CheckSegLabels, MaskUnseenClasses

__all__ = ["CheckSegLabels", "MaskUnseenClasses", "PaperEvalResize"]
