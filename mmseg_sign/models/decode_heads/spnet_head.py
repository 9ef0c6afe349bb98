"""SPNetHead: the semantic projection classifier of SPNet (Xian et al.,
"Semantic Projection Network for Zero- and Few-Label Semantic
Segmentation", CVPR 2019; GitHub: subhc/SPNet), the paper's first Table-1
baseline."""
from typing import List, Optional, Sequence, Union

import torch
from mmseg.models.decode_heads.decode_head import BaseDecodeHead
from mmseg.registry import MODELS
from mmseg.utils import SampleList
from torch import Tensor

from ..necks.input_projections import (build_input_proj, check_levels,
                                       select_levels, takes_levels)
from .class_embedding_mixin import ClassEmbeddingMixin

#: the logit given to unseen classes while training on the seen ones: the
#: softmax gives them 0 (and no gradient) in float16 / bfloat16 as well,
#: and, unlike -inf, it survives the bilinear resize of the logits
UNSEEN_TRAIN_LOGIT = -1e4


@MODELS.register_module()
class SPNetHead(ClassEmbeddingMixin, BaseDecodeHead):
    """SPNet: a learned projection ``P`` of the backbone features into the
    word-embedding space and the fixed class embeddings ``M`` as the
    classifier::

        logits[b, k, h, w] = P(x)[b, :, h, w] · M[k]

    ``P`` is DeepLab-v2's ASPP (the sum of 3×3 convs with ``dilations``)
    with the embedding width as its output, as in SPNet, which replaces
    DeepLab-v2's last layer by the projection. Training sees the seen
    classes only: their softmax runs over the seen classes (unseen logits
    are set to ``UNSEEN_TRAIN_LOGIT``). At test time all classes compete;
    calibrated stacking (SPNet-c) subtracts ``calibration`` from the seen
    classes' logits (``GZSLIoUMetric``'s calibration sweep finds it).

    Args:
        class_embeddings (str): ``.npz`` table (class names + vectors) of the
            model's classes in order (M).
        unseen_classes (Sequence[str | int], optional): the unseen classes
            (default: set from the training dataset by ``ClassSplitHook``).
        dilations (Sequence[int]): dilations of ``P``'s branches (DeepLab-v2:
            6, 12, 18, 24).
        input_proj (str | dict): ``P``, as the SIM's E: ``'aspp'`` or a
            projection over several levels, e.g. ``dict(type='MLPFusion')``
            (then ``in_index`` / ``in_channels`` lists and
            ``input_transform='multiple_select'``).
        calibration (float): γ of calibrated stacking; 0 disables it.
        embed_dim (int): width of the placeholder table (missing file).
        held_out_classes (Sequence[str], optional): table rows left out.
        **kwargs: :class:`BaseDecodeHead` arguments (``in_channels``,
            ``num_classes``, ``in_index``, ``loss_decode``, ...).
            ``channels`` defaults to the table's width (unused: C has no
            weights of its own).
    """

    def __init__(self,
                 class_embeddings: str,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 dilations: Sequence[int] = (6, 12, 18, 24),
                 input_proj: Union[str, dict] = 'aspp',
                 calibration: float = 0.0,
                 embed_dim: int = 600,
                 held_out_classes: Optional[Sequence[str]] = None,
                 **kwargs):
        kwargs.setdefault('channels', embed_dim)
        kwargs.setdefault('dropout_ratio', 0.0)
        kwargs.setdefault(
            'loss_decode',
            dict(
                type='CrossEntropyLoss',
                use_sigmoid=False,
                loss_weight=1.0,
                avg_non_ignore=True))
        # DeepLab-v2's classifier init (N(0, 0.01)) on the ASPP projection;
        # a multi-level projection keeps its layers' own (its BN weights
        # must stay 1)
        kwargs.setdefault(
            'init_cfg', None if takes_levels(input_proj) else dict(
                type='Normal', std=0.01, override=dict(name='projection')))
        super().__init__(**kwargs)
        del self.conv_seg  # the classifier is the fixed table M
        self._init_class_embedding(class_embeddings, embed_dim,
                                   held_out_classes, unseen_classes)
        if takes_levels(input_proj):  # mmseg's head hands the list on
            check_levels('SPNetHead', self.in_index, self.in_channels,
                         self.input_transform, ('multiple_select', ))
        if input_proj is None:
            raise ValueError("SPNetHead needs its projection P (input_proj="
                             "'aspp' or a projection's config).")
        self.projection = build_input_proj(input_proj, self.in_channels,
                                           self.class_embedding.shape[1],
                                           dilations, 'SPNetHead')
        self.calibration = calibration

    def forward(self, inputs: Sequence[Tensor]) -> Tensor:
        """Backbone features ``[B, in_channels, H, W]`` (at ``in_index``) →
        logits ``[B, num_classes, H, W]``."""
        if self.input_transform == 'resize_concat':
            x = self._transform_inputs(inputs)
        else:  # one level, or the projection's several
            x = select_levels(inputs, self.in_index, self.in_channels,
                              'SPNetHead')
        projected = self.projection.project(x)
        if self.dropout is not None:
            projected = self.dropout(projected)
        return torch.einsum('bchw,kc->bkhw', projected,
                            self.class_embedding.to(projected.dtype))

    def loss_by_feat(self, seg_logits: Tensor,
                     batch_data_samples: SampleList) -> dict:
        """mmseg's losses with the softmax over the seen classes only."""
        seg_logits = seg_logits.masked_fill(
            self.unseen_mask[None, :, None, None], UNSEEN_TRAIN_LOGIT)
        return super().loss_by_feat(seg_logits, batch_data_samples)

    def predict(self, inputs, batch_img_metas: List[dict], test_cfg) -> Tensor:
        """Logits of all classes (calibrated), resized to the input."""
        return self.predict_by_feat(
            self.calibrate(self.forward(inputs)), batch_img_metas)
