"""Class lists and default zero-shot splits of the supported benchmarks.

The lists follow the class order of SPNet / CaGNet / SIGN (CaGNet's
repository, ``dataloaders/*.py``); the unseen splits are the papers' (SIGN,
section 4.1; docs/reproduction.md).
"""

VOC20_CLASSES = (
    'aeroplane', 'bicycle', 'bird', 'boat', 'bottle', 'bus', 'car', 'cat',
    'chair', 'cow', 'diningtable', 'dog', 'horse', 'motorbike', 'person',
    'pottedplant', 'sheep', 'sofa', 'train', 'tvmonitor',
)

VOC20_UNSEEN = ('pottedplant', 'sheep', 'sofa', 'train', 'tvmonitor')

CONTEXT33_CLASSES = (
    'aeroplane', 'bicycle', 'bird', 'boat', 'bottle', 'bus', 'car', 'cat',
    'chair', 'cow', 'diningtable', 'dog', 'horse', 'motorbike', 'person',
    'pottedplant', 'sheep', 'sofa', 'train', 'tvmonitor', 'sky', 'grass',
    'ground', 'road', 'building', 'tree', 'water', 'mountain', 'wall', 'floor',
    'track', 'keyboard', 'ceiling',
)

CONTEXT33_UNSEEN = ('cow', 'motorbike', 'sofa', 'cat')

# The 59-class protocol (ZS3 / ZegCLIP): 10 unseen classes, cumulative order.
CONTEXT59_UNSEEN = ('cow', 'motorbike', 'sofa', 'cat', 'boat', 'fence', 'bird',
                    'tvmonitor', 'keyboard', 'aeroplane')

COCOSTUFF171_CLASSES = (
    'person', 'bicycle', 'car', 'motorcycle', 'airplane', 'bus', 'train',
    'truck', 'boat', 'traffic light', 'fire hydrant', 'stop sign',
    'parking meter', 'bench', 'bird', 'cat', 'dog', 'horse', 'sheep', 'cow',
    'elephant', 'bear', 'zebra', 'giraffe', 'backpack', 'umbrella', 'handbag',
    'tie', 'suitcase', 'frisbee', 'skis', 'snowboard', 'sports ball', 'kite',
    'baseball bat', 'baseball glove', 'skateboard', 'surfboard',
    'tennis racket', 'bottle', 'wine glass', 'cup', 'fork', 'knife', 'spoon',
    'bowl', 'banana', 'apple', 'sandwich', 'orange', 'broccoli', 'carrot',
    'hot dog', 'pizza', 'donut', 'cake', 'chair', 'couch', 'potted plant',
    'bed', 'dining table', 'toilet', 'tv', 'laptop', 'mouse', 'remote',
    'keyboard', 'cell phone', 'microwave', 'oven', 'toaster', 'sink',
    'refrigerator', 'book', 'clock', 'vase', 'scissors', 'teddy bear',
    'hair drier', 'toothbrush', 'banner', 'blanket', 'branch', 'bridge',
    'building-other', 'bush', 'cabinet', 'cage', 'cardboard', 'carpet',
    'ceiling-other', 'ceiling-tile', 'cloth', 'clothes', 'clouds', 'counter',
    'cupboard', 'curtain', 'desk-stuff', 'dirt', 'door-stuff', 'fence',
    'floor-marble', 'floor-other', 'floor-stone', 'floor-tile', 'floor-wood',
    'flower', 'fog', 'food-other', 'fruit', 'furniture-other', 'grass',
    'gravel', 'ground-other', 'hill', 'house', 'leaves', 'light', 'mat',
    'metal', 'mirror-stuff', 'moss', 'mountain', 'mud', 'napkin', 'net',
    'paper', 'pavement', 'pillow', 'plant-other', 'plastic', 'platform',
    'playingfield', 'railing', 'railroad', 'river', 'road', 'rock', 'roof',
    'rug', 'salad', 'sand', 'sea', 'shelf', 'sky-other', 'skyscraper', 'snow',
    'solid-other', 'stairs', 'stone', 'straw', 'structural-other', 'table',
    'tent', 'textile-other', 'towel', 'tree', 'vegetable', 'wall-brick',
    'wall-concrete', 'wall-other', 'wall-panel', 'wall-stone', 'wall-tile',
    'wall-wood', 'water-other', 'waterdrops', 'window-blind', 'window-other',
    'wood',
)

COCOSTUFF171_UNSEEN = (
    'cow', 'giraffe', 'suitcase', 'frisbee', 'skateboard', 'carrot', 'scissors',
    'cardboard', 'clouds', 'grass', 'playingfield', 'river', 'road', 'tree',
    'wall-concrete')

# CamVid (Brostow et al., 2008) in the SegNet tutorial's 11-class labelling
# (label ids 0-10, 11 = void). Pole has no word vector with its meaning in
# the published tables, so it is held out (void) by default.
CAMVID_CLASSES = (
    'sky', 'building', 'pole', 'road', 'pavement', 'tree', 'sign', 'fence',
    'car', 'pedestrian', 'bicyclist',
)

CAMVID_HELD_OUT = ('pole', )

CAMVID_UNSEEN = ('pavement', 'car', 'pedestrian')

# The CaGNet COCO-Stuff row of each CamVid class (the same meaning; docs/
# camvid.md): the one home of the name map.
CAMVID_TO_COCOSTUFF = {
    'sky': 'sky-other',
    'building': 'building-other',
    'road': 'road',
    'pavement': 'pavement',
    'tree': 'tree',
    'sign': 'street sign',
    'fence': 'fence',
    'car': 'car',
    'pedestrian': 'person',
    'bicyclist': 'bicycle',
}

# The built-in toy benchmark (mmseg_sign/analysis/toy_data.py makes it):
# each class is a colour, a texture and a typical vertical position.
#: Class -> (colour, texture, position). The classes form a code in which
#: any two classes differ in at least two attributes (texture index =
#: (colour index + position index) mod 4), so each unseen class is a new
#: combination of values that seen classes show.
TOY_ATTRIBUTES = {
    'kite': ('red', 'plain', 'top'),
    'flag': ('yellow', 'stripes', 'top'),
    'leaf': ('green', 'dots', 'top'),
    'brick': ('red', 'stripes', 'middle'),
    'lamp': ('yellow', 'dots', 'middle'),
    'hedge': ('green', 'checker', 'middle'),
    'window': ('blue', 'plain', 'middle'),
    'sand': ('yellow', 'checker', 'bottom'),
    'grass': ('green', 'plain', 'bottom'),
    'river': ('blue', 'stripes', 'bottom'),
}

TOY_CLASSES = tuple(TOY_ATTRIBUTES)

TOY_UNSEEN = ('flag', 'hedge', 'river')

TOY_PALETTE = [[220, 40, 40], [240, 220, 60], [40, 200, 60], [150, 30, 30],
               [200, 160, 20], [20, 110, 40], [60, 110, 230],
               [250, 240, 150], [130, 230, 120], [20, 40, 140]]
