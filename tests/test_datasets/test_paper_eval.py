"""Scoring like the SIGN paper's Table 1 (the authors' test protocol):
``PaperEvalResize``, the exact 65 -> 513 -> 65 identity behind it, the
output-stride arithmetic, the ``*_paper-eval.py`` configs, and
``tools/test.py`` on toy data scoring at the 9x9 feature resolution."""
import os.path as osp

import cv2
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from e2e_utils import REPO, last_metrics, run_tool, write_config
from mmcv.transforms import Compose
from mmengine.config import Config
from mmseg.registry import DATASETS, MODELS, TRANSFORMS
from PIL import Image

from mmseg_sign.datasets.transforms.paper_eval import feature_size

PAPER_CONFIGS = {
    'voc': 'sign_voc',
    'context': 'sign_context',
    'cocostuff': 'sign_cocostuff',
    'toy': 'sign_toy'
}


def nearest(label, out_h, out_w):
    """Nearest-neighbour resize with cv2's ``INTER_NEAREST`` convention (=
    ``mmcv.imresize(..., interpolation='nearest')``, the authors' call):
    output index ``i`` reads source index ``floor(i * src / dst)``, no
    half-pixel offset (PIL's NEAREST and torch's 'nearest-exact' sample
    pixel centres instead and give other maps)."""
    h, w = label.shape
    rows = np.minimum((np.arange(out_h) * h / out_h).astype(int), h - 1)
    cols = np.minimum((np.arange(out_w) * w / out_w).astype(int), w - 1)
    return label[rows[:, None], cols[None, :]]


def hand_label():
    """A 37x50 (h x w) label with known regions; scale 33 at stride 8 gives
    a 5x5 map that samples rows 0, 7, 14, 22, 29 and columns 0, 10, 20,
    30, 40 (``floor(i * 37 / 5)``, ``floor(i * 50 / 5)``)."""
    label = np.zeros((37, 50), np.uint8)
    label[:, 25:] = 1  # right half
    label[20:, :] = 2  # bottom rows
    label[0:8, 0:10] = 255  # an ignored top-left block
    label[14, 20] = 4  # a single pixel on the sampled grid
    label[15, 21] = 3  # a single pixel off it: must not appear
    return label


EXPECTED_5X5 = np.array([
    [255, 0, 0, 1, 1],
    [255, 0, 0, 1, 1],
    [0, 0, 4, 1, 1],
    [2, 2, 2, 2, 2],
    [2, 2, 2, 2, 2],
], np.uint8)


def test_hand_label_convention():
    label = hand_label()
    np.testing.assert_array_equal(nearest(label, 5, 5), EXPECTED_5X5)
    np.testing.assert_array_equal(
        cv2.resize(label, (5, 5), interpolation=cv2.INTER_NEAREST),
        EXPECTED_5X5)


def test_transform_warps_image_and_scores_at_feature_size():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (37, 50, 3), dtype=np.uint8)
    label = hand_label()
    t = TRANSFORMS.build(
        dict(type='PaperEvalResize', scale=33, output_stride=8))
    assert t.feat_shape == (5, 5)
    out = t(
        dict(
            img=img,
            img_shape=(37, 50),
            ori_shape=(37, 50),
            gt_seg_map=label.copy(),
            seg_fields=['gt_seg_map']))
    # the image: warped (aspect ratio ignored), bilinear, float32
    assert out['img'].shape == (33, 33, 3) and out['img'].dtype == np.float32
    np.testing.assert_array_equal(
        out['img'],
        cv2.resize(
            img.astype(np.float32), (33, 33), interpolation=cv2.INTER_LINEAR))
    assert out['img_shape'] == (33, 33)
    assert out['scale_factor'] == (33 / 50, 33 / 37)
    # the label: one nearest resize of the original map to 5x5
    np.testing.assert_array_equal(out['gt_seg_map'], EXPECTED_5X5)
    assert out['ori_shape'] == (5, 5)  # predictions come out at 5x5


def test_transform_label_via_warp_is_the_authors_two_step():
    label = hand_label()
    t = TRANSFORMS.build(
        dict(type='PaperEvalResize', scale=33, label_via_warp=True))
    out = t(
        dict(
            img=np.zeros((37, 50, 3), np.uint8),
            gt_seg_map=label,
            seg_fields=['gt_seg_map']))
    np.testing.assert_array_equal(out['gt_seg_map'],
                                  nearest(nearest(label, 33, 33), 5, 5))


def test_pipeline_after_load_annotations(tmp_path):
    """The real test pipeline order: the label is loaded at full size, then
    resized once; CheckSegLabels and PackSegInputs see the 5x5 map."""
    rng = np.random.default_rng(1)
    img_path, seg_path = str(tmp_path / 'img.png'), str(tmp_path / 'seg.png')
    Image.fromarray(rng.integers(0, 256, (37, 50, 3),
                                 dtype=np.uint8)).save(img_path)
    Image.fromarray(hand_label()).save(seg_path)
    pipeline = Compose([
        TRANSFORMS.build(t) for t in [
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations'),
            dict(type='PaperEvalResize', scale=33, output_stride=8),
            dict(type='CheckSegLabels', num_classes=5, ignore_index=255),
            dict(type='PackSegInputs'),
        ]
    ])
    data = pipeline(
        dict(
            img_path=img_path,
            seg_map_path=seg_path,
            reduce_zero_label=False,
            seg_fields=[]))
    assert tuple(data['inputs'].shape) == (3, 33, 33)
    sample = data['data_samples']
    np.testing.assert_array_equal(sample.gt_sem_seg.data[0].numpy(),
                                  EXPECTED_5X5)
    assert sample.ori_shape == (5, 5) and sample.img_shape == (33, 33)
    # CheckSegLabels still checks the (resized) label
    bad = Compose(pipeline.transforms[:2] + [
        TRANSFORMS.build(dict(type='PaperEvalResize', scale=33)),
        TRANSFORMS.build(
            dict(type='CheckSegLabels', num_classes=4, ignore_index=255))
    ])
    with pytest.raises(ValueError, match=r'label values \[4\]'):
        bad(
            dict(
                img_path=img_path,
                seg_map_path=seg_path,
                reduce_zero_label=False,
                seg_fields=[]))


@pytest.mark.parametrize('scale', [513, 65, 33])
def test_align_corners_round_trip_is_identity(scale):
    """mmseg resizes the logits to img_shape and back to ori_shape; with
    align_corners=True and (scale - 1) / (feat - 1) = 8 the round trip is
    exactly the raw logits (so their argmax is scored), without it not."""
    feat = feature_size(scale, 8)
    assert (scale - 1) == 8 * (feat - 1)
    logits = torch.randn(
        2, 21, feat, feat, generator=torch.Generator().manual_seed(scale))

    def round_trip(align_corners):
        up = F.interpolate(
            logits,
            size=(scale, scale),
            mode='bilinear',
            align_corners=align_corners)
        return F.interpolate(
            up,
            size=(feat, feat),
            mode='bilinear',
            align_corners=align_corners)

    assert torch.equal(round_trip(True), logits)
    assert not torch.allclose(round_trip(False), logits)


@pytest.mark.parametrize('size', [513, 65, 33, 100])
def test_deeplabv2_resnet_output_stride(size):
    """ResNetV1c with the DeepLab-v2 settings (the stride arithmetic of
    the R101 is that of this small R18): ceil(size / 8) per side."""
    backbone = MODELS.build(
        dict(
            type='ResNetV1c',
            depth=18,
            base_channels=16,
            stem_channels=16,
            num_stages=4,
            out_indices=(3, ),
            strides=(1, 2, 1, 1),
            dilations=(1, 1, 2, 4),
            contract_dilation=True,
            norm_cfg=dict(type='BN', requires_grad=True),
            style='pytorch'))
    backbone.eval()
    with torch.no_grad():
        out = backbone(torch.zeros(1, 3, size, size))[0]
    assert out.shape[-2:] == (feature_size(size, 8), ) * 2
    if size == 513:
        assert out.shape[-2:] == (65, 65)


@pytest.mark.parametrize('name', sorted(PAPER_CONFIGS))
def test_paper_eval_configs(name):
    path = osp.join(REPO, 'configs', 'sign', f'sign_{name}_paper-eval.py')
    cfg = Config.fromfile(path)
    base = Config.fromfile(
        osp.join(REPO, 'configs', 'sign', f'{PAPER_CONFIGS[name]}.py'))
    scale = 65 if name == 'toy' else 513
    for loader in (cfg.val_dataloader, cfg.test_dataloader):
        pipeline = loader.dataset.pipeline
        assert [t['type'] for t in pipeline] == [
            'LoadImageFromFile', 'LoadAnnotations', 'PaperEvalResize',
            'CheckSegLabels', 'PackSegInputs'
        ]
        resize = TRANSFORMS.build(pipeline[2])
        assert resize.scale == (scale, scale)
        assert resize.feat_shape == (feature_size(scale), ) * 2
        # the rest of the loader is the base config's
        assert loader.dataset.data_prefix == \
            base.test_dataloader.dataset.data_prefix
    assert cfg.model.decode_head.align_corners is True
    assert base.model.decode_head.align_corners is False
    # nothing else of the model changes: a base checkpoint loads as is
    cfg.model.decode_head.align_corners = False
    assert cfg.model.to_dict() == base.model.to_dict()
    assert cfg.train_dataloader.to_dict() == base.train_dataloader.to_dict()


# ------------------------------------------------------- tools/test.py e2e
@pytest.fixture(scope='module')
def paper_eval_run(tmp_path_factory):
    """tools/test.py with the toy paper-eval config, on non-square toy
    images (72x96) and a randomly initialised SIGN checkpoint."""
    from mmseg_sign.analysis.toy_data import make_toy_dataset
    ws = tmp_path_factory.mktemp('paper_eval')
    root = ws / 'data' / 'toy'
    make_toy_dataset(
        str(root), num_train=2, num_val=10, val_size=(72, 96), seed=3)
    cfg_path = write_config(ws / 'paper.py',
                            'configs/sign/sign_toy_paper-eval.py', '')
    cfg = Config.fromfile(cfg_path)
    cfg.model.decode_head.class_embeddings = str(root / 'class_embeddings.npz')
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.eval()
    ckpt = str(ws / 'random.pth')
    torch.save({'state_dict': model.state_dict()}, ckpt)
    wd, preds = str(ws / 'wd'), ws / 'preds'
    run_tool(
        ['test.py', cfg_path, ckpt, '--work-dir', wd, '--out',
         str(preds)], ws)
    return ws, cfg, model, last_metrics(wd), preds


@pytest.mark.slow
def test_tools_test_scores_at_feature_resolution(paper_eval_run):
    from mmseg_sign.datasets.class_names import TOY_CLASSES, TOY_UNSEEN
    ws, _, _, metrics, preds = paper_eval_run
    root = ws / 'data' / 'toy'
    ids = (root / 'ImageSets' / 'Segmentation' / 'val.txt').read_text().split()
    k = len(TOY_CLASSES)
    hist = np.zeros((k, k), np.int64)
    ignored = 0
    for sample_id in ids:
        pred = np.array(Image.open(preds / f'{sample_id}.png'))
        assert pred.shape == (9, 9)  # 72x96 image -> 65x65 -> 9x9 logits
        full = np.array(
            Image.open(root / 'SegmentationClass' / f'{sample_id}.png'))
        assert full.shape == (72, 96)
        gt = nearest(full, 9, 9)
        valid = gt != 255
        ignored += int((~valid).sum())
        hist += np.bincount(
            k * gt[valid].astype(int) + pred[valid],
            minlength=k * k).reshape(k, k)
    # the metric's confusion matrix holds len(ids) * 9 * 9 - ignored pixels
    assert hist.sum() == len(ids) * 81 - ignored
    inter = np.diag(hist).astype(float)
    with np.errstate(divide='ignore', invalid='ignore'):
        iou = inter / (hist.sum(0) + hist.sum(1) - inter)
    unseen = np.array([c in TOY_UNSEEN for c in TOY_CLASSES])
    seen_m, unseen_m = np.nanmean(iou[~unseen]), np.nanmean(iou[unseen])
    h = 0.0 if seen_m + unseen_m == 0 else \
        2 * seen_m * unseen_m / (seen_m + unseen_m)
    want = dict(
        aAcc=inter.sum() / hist.sum(),
        mIoU=np.nanmean(iou),
        mIoU_seen=seen_m,
        mIoU_unseen=unseen_m,
        hIoU=h)
    for key, value in want.items():
        assert metrics[key] == pytest.approx(100 * value, abs=0.006), key


def test_scored_prediction_is_argmax_of_raw_logits(paper_eval_run):
    """What tools/test.py scored (through mmseg's 9 -> 65 -> 9 resizing)
    equals the argmax of the network's raw 9x9 logits."""
    ws, cfg, model, _, preds = paper_eval_run
    dataset_cfg = cfg.test_dataloader.dataset.copy()
    dataset_cfg.data_root = str(ws / 'data' / 'toy')
    dataset = DATASETS.build(dataset_cfg)
    for i in range(len(dataset)):
        data = dataset[i]
        batch = model.data_preprocessor(
            dict(inputs=[data['inputs']], data_samples=[data['data_samples']]),
            False)
        with torch.no_grad():
            logits = model.decode_head(model.extract_feat(batch['inputs']))
        assert logits.shape[-2:] == (9, 9)
        name = osp.splitext(osp.basename(data['data_samples'].img_path))[0]
        pred = np.array(Image.open(preds / f'{name}.png'))
        np.testing.assert_array_equal(pred, logits[0].argmax(0).numpy())
