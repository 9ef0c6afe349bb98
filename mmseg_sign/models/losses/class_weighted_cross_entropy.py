"""Cross-entropy with class weights that works with ignored pixels."""
from mmseg.models.losses import CrossEntropyLoss
from mmseg.registry import MODELS


@MODELS.register_module()
class ClassWeightedCrossEntropyLoss(CrossEntropyLoss):
    """mmseg's ``CrossEntropyLoss`` whose ``class_weight`` works on labels
    with ignored pixels: the weighted mean ``Σ w_y · ce / Σ w_y`` over the
    pixels that are not ignored, PyTorch's ``F.cross_entropy(weight=...,
    ignore_index=...)``.

    mmseg 1.2.2 computes that mean's denominator by indexing the weights
    with every label, the ignore index (255) included, and fails with
    ``IndexError: index 255 is out of bounds`` on any image with an ignored
    pixel (open-mmlab/mmsegmentation#3734, #3831). Here the denominator is
    computed from the valid pixels and handed to mmseg as ``avg_factor``;
    everything else is mmseg's. Softmax cross-entropy only.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.use_sigmoid or self.use_mask:
            raise ValueError('ClassWeightedCrossEntropyLoss is the softmax '
                             'cross-entropy (use_sigmoid / use_mask: use '
                             "mmseg's CrossEntropyLoss)")
        if self.class_weight is None:
            raise ValueError('ClassWeightedCrossEntropyLoss needs '
                             'class_weight (without it: CrossEntropyLoss)')

    def forward(self,
                cls_score,
                label,
                weight=None,
                avg_factor=None,
                reduction_override=None,
                ignore_index=-100,
                **kwargs):
        """``cls_score`` ``[B, K, H, W]``, ``label`` ``[B, H, W]``."""
        reduction = reduction_override or self.reduction
        if avg_factor is None and reduction == 'mean':
            class_weight = cls_score.new_tensor(self.class_weight)
            valid = label != ignore_index
            pixel_weight = class_weight[label[valid]]
            if weight is not None:  # a pixel sampler's weights
                pixel_weight = pixel_weight * weight[valid].float()
            avg_factor = pixel_weight.sum()
        return super().forward(cls_score, label, weight, avg_factor,
                               reduction_override, ignore_index, **kwargs)
