"""The built-in toy zero-shot dataset (``tools/make_toy_dataset.py``)."""
from mmseg.registry import DATASETS

from .class_names import TOY_CLASSES, TOY_PALETTE, TOY_UNSEEN
from .zero_shot import ZeroShotSegDataset


@DATASETS.register_module()
class ZeroShotToyDataset(ZeroShotSegDataset):
    """Synthetic shapes whose classes share colour, texture and position
    attributes with each other; VOC layout, lossless PNG images, labels
    0..K-1 with 255 for the void background."""
    METAINFO = dict(
        classes=TOY_CLASSES, palette=TOY_PALETTE, unseen_classes=TOY_UNSEEN)
    REDUCE_ZERO_LABEL = False  # the label maps' convention
    HOW_TO_GET = ('Make it with `python tools/make_toy_dataset.py` (data/toy '
                  'by default; the README\'s quick start).')

    def __init__(self,
                 ann_file='',
                 img_suffix='.png',
                 seg_map_suffix='.png',
                 **kwargs):
        super().__init__(
            ann_file=ann_file,
            img_suffix=img_suffix,
            seg_map_suffix=seg_map_suffix,
            **kwargs)
