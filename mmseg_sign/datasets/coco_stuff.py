"""COCO-Stuff 164k, 171 classes, 15 unseen (SPNet / CaGNet / SIGN)."""
from mmseg.datasets import COCOStuffDataset
from mmseg.registry import DATASETS

from .class_names import COCOSTUFF171_CLASSES, COCOSTUFF171_UNSEEN
from .zero_shot import ZeroShotSegDataset

assert tuple(COCOStuffDataset.METAINFO['classes']) == COCOSTUFF171_CLASSES


@DATASETS.register_module()
class ZeroShotCOCOStuffDataset(ZeroShotSegDataset):
    """COCO-Stuff 164k with mmseg's ``*_labelTrainIds.png`` (0..170, 255)."""
    METAINFO = dict(
        classes=COCOSTUFF171_CLASSES,
        palette=COCOStuffDataset.METAINFO['palette'],
        unseen_classes=COCOSTUFF171_UNSEEN)
    REDUCE_ZERO_LABEL = False  # the label maps' convention

    def __init__(self,
                 img_suffix='.jpg',
                 seg_map_suffix='_labelTrainIds.png',
                 **kwargs):
        super().__init__(
            img_suffix=img_suffix, seg_map_suffix=seg_map_suffix, **kwargs)
