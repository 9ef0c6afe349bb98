"""CamVid (the SegNet tutorial's, converted), 7 seen / 3 unseen classes."""
import copy
from typing import Optional, Sequence, Union

from mmseg.registry import DATASETS
from PIL import Image

from .class_names import CAMVID_CLASSES, CAMVID_HELD_OUT, CAMVID_UNSEEN
from .zero_shot import ZeroShotSegDataset


@DATASETS.register_module()
class ZeroShotCamVidDataset(ZeroShotSegDataset):
    """CamVid's 367 training / 101 validation driving photographs (480×360)
    with the SegNet tutorial's 11 classes, converted by
    ``tools/dataset_converters/camvid.py`` (label maps 0..10, void = 255;
    ``img_dir/{train,val}``, ``ann_dir/{train,val}``).

    *Pole* is held out by default (``held_out_classes``): no published word
    vector has its meaning, so its pixels are void (255) in training and in
    evaluation, through mmseg's ``label_map``, and the class list is the
    other 10. Pass ``metainfo=dict(held_out_classes=[])`` to keep it (the
    class-embedding table then needs a pole row).

    Default unseen: pavement, car, pedestrian (docs/camvid.md); seen: sky,
    building, road, tree, sign, fence, bicyclist.
    """
    METAINFO = dict(
        classes=CAMVID_CLASSES,
        # the SegNet tutorial's colours
        palette=[[128, 128, 128], [128, 0, 0], [192, 192, 128], [128, 64, 128],
                 [60, 40, 222], [128, 128, 0], [192, 128, 128], [64, 64, 128],
                 [64, 0, 128], [64, 64, 0], [0, 128, 192]],
        unseen_classes=CAMVID_UNSEEN)
    REDUCE_ZERO_LABEL = False  # the converted maps: 0 = sky, 255 = void
    HOW_TO_GET = ('Convert the SegNet tutorial\'s CamVid with `python '
                  'tools/dataset_converters/camvid.py SRC data/camvid` '
                  '(docs/camvid.md).')

    def __init__(self,
                 img_suffix='.png',
                 seg_map_suffix='.png',
                 photo_size: Union[str, Sequence[int], None] = 'auto',
                 **kwargs):
        # (W, H) the config is made for, which the conversion under
        # data_root must hold (checked when the list is loaded): 'auto', the
        # scale the training pipeline's RandomResize starts from (the
        # CamVid configs' img_scale: the photographs' own size); None: no
        # check (a pipeline that resizes to another scale on purpose)
        if photo_size == 'auto':
            photo_size = next(
                (t.get('scale') for t in kwargs.get('pipeline') or []
                 if isinstance(t, dict) and t.get('type') == 'RandomResize'),
                None)
        self.photo_size = tuple(photo_size) if photo_size else None
        super().__init__(
            img_suffix=img_suffix, seg_map_suffix=seg_map_suffix, **kwargs)

    def full_init(self) -> None:
        """mmengine's, then: the photographs are the size the config is
        for (``photo_size``). Another conversion of CamVid under
        ``data_root`` (e.g. the 180×135 one for the 480×360 config) would
        train resized photographs and score at another resolution, without
        a word."""
        super().full_init()
        if not self.photo_size or not len(self):
            return
        path = self.get_data_info(0)['img_path']
        with Image.open(path) as image:
            size = image.size
        if tuple(size) != self.photo_size:
            want = '×'.join(map(str, self.photo_size))
            raise ValueError(
                f'ZeroShotCamVidDataset: {self.data_root} holds {size[0]}×'
                f'{size[1]} photographs ({path}), but this config is made '
                f'for {want} (its img_scale, where the training pipeline\'s '
                f'RandomResize starts): point data_root at the {want} '
                'conversion (tools/dataset_converters/camvid.py --scale), '
                'or set img_scale and crop_size for these photographs '
                '(photo_size=None in the dataset turns the check off).')

    @classmethod
    def _load_metainfo(cls, metainfo: Optional[dict] = None) -> dict:
        metainfo = copy.deepcopy(dict(metainfo)) if metainfo else {}
        metainfo.setdefault('held_out_classes', list(CAMVID_HELD_OUT))
        return super()._load_metainfo(metainfo)
