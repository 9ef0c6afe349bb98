from .zero_shot import CheckSegLabels, MaskUnseenClasses

__all__ = ["CheckSegLabels", "MaskUnseenClasses"]
