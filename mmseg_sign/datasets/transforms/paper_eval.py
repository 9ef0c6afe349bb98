"""The test transform that scores a model like the SIGN paper's Table 1."""
import math
from typing import Sequence, Tuple, Union

import mmcv
import numpy as np
from mmcv.transforms import BaseTransform
from mmseg.registry import TRANSFORMS


def feature_size(size: int, output_stride: int = 8) -> int:
    """Side of the logit map of a ``size`` input at ``output_stride``.

    Every stride-2 stage of a ResNet (3×3 conv or max-pool, padding 1) maps
    ``n`` to ``floor((n - 1) / 2) + 1 = ceil(n / 2)``, so three of them give
    ``ceil(size / 8)``: 513 → 65, 65 → 9, 33 → 5.

    Args:
        size (int): the input side.
        output_stride (int): 8 or 16 (DeepLab-v2: 8).

    Returns:
        int: the logit map's side.
    """
    return math.ceil(size / output_stride)


@TRANSFORMS.register_module()
class PaperEvalResize(BaseTransform):
    """Warp the image to ``scale`` and score at the feature-map resolution.

    The test protocol behind Table 1 of the SIGN paper, as the authors'
    released code runs it (docs/reproduction.md, "Test protocol"): every
    image is warped to 513×513 (aspect ratio ignored), single scale,
    argmax of the logits, no calibration; the ground truth is resized
    (nearest) to the 65×65 logit map (output stride 8) and scored there,
    not at full image resolution.

    This transform, put **after** ``LoadAnnotations`` in a test pipeline:

    * resizes the image to ``scale`` with bilinear interpolation
      (cv2 ``INTER_LINEAR`` via ``mmcv.imresize``), in float32 as the
      authors do (they resize the mean-subtracted float image), so no
      uint8 rounding;
    * resizes every map of ``seg_fields`` (``gt_seg_map``) with nearest
      neighbour (cv2 ``INTER_NEAREST``: source index ``floor(i · src /
      dst)``, the authors' function) to the feature size
      ``ceil(scale / output_stride)``;
    * sets ``img_shape`` to ``scale`` and ``ori_shape`` to the feature
      size, so that mmseg returns its predictions, and the metric scores
      them, at the feature resolution.

    mmseg upsamples the head's logits bilinearly to ``img_shape``
    (``BaseDecodeHead.predict_by_feat``) and then resizes them to
    ``ori_shape`` (``BaseSegmentor.postprocess_result``), both with the
    head's ``align_corners``. With ``align_corners=True`` and
    ``(scale - 1) / (feature - 1) = output_stride`` (513 = 8·64 + 1,
    65 = 8·8 + 1), the round trip lands exactly on the original logit grid:
    the scored argmax is that of the raw 65×65 logits, as in the paper.
    The ``*_paper-eval.py`` configs therefore set
    ``model.decode_head.align_corners=True`` (not a weight: any checkpoint
    of the same model loads).

    The label is resized from the **original** map by default. The
    authors' released code resizes it twice: their test dataset warps the
    label to 513×513 together with the image (cv2 nearest), then it is
    resized again (cv2 nearest) to the logits' 65×65. ``label_via_warp=True``
    does exactly that. The two pick the same label except that about a
    third to a half of the sampled rows / columns move by one source pixel
    (two for sides above ~600 px), which matters at object boundaries only.

    Predictions have the feature size, so ``tools/test.py --show-dir``
    (which paints them on the original image) does not apply; ``--out``
    writes them as ``h×w`` PNGs.

    Args:
        scale (int | tuple[int, int]): size of the warped image, ``513`` or
            ``(w, h)`` (mmcv's order). Defaults to 513.
        output_stride (int): the network's output stride. Defaults to 8
            (DeepLab-v2: strides (1, 2, 1, 1), dilations (1, 1, 2, 4)).
        label_via_warp (bool): resize the label to ``scale`` first, then to
            the feature size, as the authors' code. Defaults to False.
    """

    def __init__(self,
                 scale: Union[int, Sequence[int]] = 513,
                 output_stride: int = 8,
                 label_via_warp: bool = False):
        if isinstance(scale, int):
            scale = (scale, scale)
        self.scale: Tuple[int, int] = tuple(int(s) for s in scale)
        if len(self.scale) != 2 or min(self.scale) < 1:
            raise ValueError(f'scale must be an int or (w, h), got {scale}')
        if output_stride < 1:
            raise ValueError(f'output_stride must be >= 1: {output_stride}')
        self.output_stride = output_stride
        self.label_via_warp = label_via_warp

    @property
    def feat_shape(self) -> Tuple[int, int]:
        """``(h, w)`` of the logit map (and of the scored label)."""
        w, h = self.scale
        return (feature_size(h, self.output_stride),
                feature_size(w, self.output_stride))

    def transform(self, results: dict) -> dict:
        w, h = self.scale
        img = results['img']
        src_h, src_w = img.shape[:2]
        results['img'] = mmcv.imresize(
            img.astype(np.float32), (w, h),
            interpolation='bilinear',
            backend='cv2')
        results['img_shape'] = (h, w)
        results['scale_factor'] = (w / src_w, h / src_h)
        results['keep_ratio'] = False
        feat_h, feat_w = self.feat_shape
        seg_keys = list(results.get('seg_fields', []))
        if 'gt_seg_map' in results and 'gt_seg_map' not in seg_keys:
            seg_keys.append('gt_seg_map')
        for key in seg_keys:
            seg = results[key]
            if self.label_via_warp:
                seg = mmcv.imresize(
                    seg, (w, h), interpolation='nearest', backend='cv2')
            results[key] = mmcv.imresize(
                seg, (feat_w, feat_h), interpolation='nearest', backend='cv2')
        # the predictions are returned (and scored) at this size
        results['ori_shape'] = (feat_h, feat_w)
        return results

    def __repr__(self):
        return (f'{type(self).__name__}(scale={self.scale}, '
                f'output_stride={self.output_stride}, '
                f'label_via_warp={self.label_via_warp})')
