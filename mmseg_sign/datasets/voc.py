"""Pascal VOC 2012 (+ SBD) with the 15 / 5 zero-shot split."""
import os.path as osp

import mmengine.fileio as fileio
from mmseg.datasets import PascalVOCDataset
from mmseg.registry import DATASETS

from .class_names import VOC20_CLASSES, VOC20_UNSEEN
from .zero_shot import ZeroShotSegDataset


@DATASETS.register_module()
class ZeroShotPascalVOCDataset(ZeroShotSegDataset):
    """VOC 2012: 20 object classes, background ignored.

    Label maps are mmseg's VOC maps (0 = background, 1..20, 255 = border):
    ``reduce_zero_label=True`` turns background into 255 and the classes into
    0..19. Default unseen: pottedplant, sheep, sofa, train, tvmonitor.
    """
    METAINFO = dict(
        classes=VOC20_CLASSES,
        palette=PascalVOCDataset.METAINFO['palette'][1:],
        unseen_classes=VOC20_UNSEEN)
    REDUCE_ZERO_LABEL = True  # the label maps' convention

    def __init__(self,
                 ann_file,
                 img_suffix='.jpg',
                 seg_map_suffix='.png',
                 reduce_zero_label=True,
                 **kwargs):
        super().__init__(
            ann_file=ann_file,
            img_suffix=img_suffix,
            seg_map_suffix=seg_map_suffix,
            reduce_zero_label=reduce_zero_label,
            **kwargs)
        assert fileio.exists(self.data_prefix['img_path'],
                             self.backend_args) and osp.isfile(self.ann_file)
