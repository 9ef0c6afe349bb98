"""Pascal Context: the 33-class (CaGNet / SIGN) and 59-class protocols."""
from mmseg.datasets import PascalContextDataset59
from mmseg.registry import DATASETS

from .class_names import CONTEXT33_CLASSES, CONTEXT33_UNSEEN, CONTEXT59_UNSEEN
from .context33 import context59_name
from .zero_shot import ZeroShotSegDataset

_P59 = PascalContextDataset59.METAINFO
_P59_PALETTE = dict(zip(_P59['classes'], _P59['palette']))


class _PascalContextDataset(ZeroShotSegDataset):
    """Pascal Context's file layout (``.jpg`` images, ``.png`` label maps);
    ``reduce_zero_label`` defaults to the label maps' convention
    (``REDUCE_ZERO_LABEL``)."""
    REDUCE_ZERO_LABEL = False

    def __init__(self,
                 ann_file='',
                 img_suffix='.jpg',
                 seg_map_suffix='.png',
                 reduce_zero_label=None,
                 **kwargs):
        if reduce_zero_label is None:
            reduce_zero_label = self.REDUCE_ZERO_LABEL
        super().__init__(
            ann_file=ann_file,
            img_suffix=img_suffix,
            seg_map_suffix=seg_map_suffix,
            reduce_zero_label=reduce_zero_label,
            **kwargs)


@DATASETS.register_module()
class ZeroShotPascalContextDataset(_PascalContextDataset):
    """Pascal Context, 33 classes; unseen: cow, motorbike, sofa, cat.

    Label maps hold 0..32 and 255 (everything else); make them from mmseg's
    59-class maps with ``tools/dataset_converters/pascal_context33.py``.
    """
    METAINFO = dict(
        classes=CONTEXT33_CLASSES,
        palette=[_P59_PALETTE[context59_name(c)] for c in CONTEXT33_CLASSES],
        unseen_classes=CONTEXT33_UNSEEN)
    REDUCE_ZERO_LABEL = False  # the label maps' convention


@DATASETS.register_module()
class ZeroShotPascalContext59Dataset(_PascalContextDataset):
    """Pascal Context, 59 classes (mmseg's maps, 0 = background, so
    ``reduce_zero_label=True``); 10 unseen classes (ZS3 / ZegCLIP)."""
    METAINFO = dict(
        classes=_P59['classes'],
        palette=_P59['palette'],
        unseen_classes=CONTEXT59_UNSEEN)
    REDUCE_ZERO_LABEL = True  # the label maps' convention
