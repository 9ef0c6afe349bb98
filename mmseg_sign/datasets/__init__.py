from ..structures.class_split import resolve_split
from .camvid import ZeroShotCamVidDataset
from .coco_stuff import ZeroShotCOCOStuffDataset
from .pascal_context import (ZeroShotPascalContext59Dataset,
                             ZeroShotPascalContextDataset)
from .toy import ZeroShotToyDataset
from .transforms import CheckSegLabels, MaskUnseenClasses, PaperEvalResize
from .voc import ZeroShotPascalVOCDataset
from .zero_shot import ZeroShotSegDataset
from .zero_shot_wrapper import (ZeroShotDataset, ZeroShotMixin,
                                dataset_metainfo_from_cfg, zero_shot_class,
                                zero_shot_metainfo_from_cfg)

__all__ = [
    'ZeroShotSegDataset', 'ZeroShotPascalVOCDataset',
    'ZeroShotPascalContextDataset', 'ZeroShotPascalContext59Dataset',
    'ZeroShotCOCOStuffDataset', 'ZeroShotCamVidDataset', 'ZeroShotToyDataset',
    'MaskUnseenClasses', 'CheckSegLabels', 'PaperEvalResize', 'resolve_split',
    'ZeroShotDataset', 'ZeroShotMixin', 'zero_shot_class',
    'zero_shot_metainfo_from_cfg', 'dataset_metainfo_from_cfg'
]
