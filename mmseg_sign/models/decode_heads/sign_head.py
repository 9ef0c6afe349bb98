"""SIGNHead: classifier C, generator G, discriminator D and the frozen word
embeddings M (paper section 3.2; the stages: docs/reproduction.md)."""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from mmseg.models.decode_heads.decode_head import BaseDecodeHead
from mmseg.models.losses import accuracy
from mmseg.models.utils import resize
from mmseg.registry import MODELS
from mmseg.utils import SampleList
from torch import Tensor

from ..discriminators import D_REDUCTIONS, discriminator_loss
from ..generators import MMD_ESTIMATORS, class_mmd_loss, sample_per_class
from ..losses import adversarial_loss, kl_divergence, masked_mean
from .class_embedding_mixin import ClassEmbeddingMixin
from .self_training_mixin import SelfTrainingMixin
from .transfer_mixin import TransferMixin

CLASSIFIER_LAYOUTS = ('shared_trunk', 'linear')


def _module_cfg(cfg: Optional[dict], mlp_type: str, mlp_kwargs: dict,
                **widths) -> dict:
    """G's or D's config: ``cfg`` (default ``dict(type=mlp_type)``) with the
    head's legacy ``mlp_kwargs`` where its type is ``mlp_type`` and the
    head's ``widths``, each where ``cfg`` does not set it."""
    cfg = dict(cfg or dict(type=mlp_type))
    kind = cfg.get('type')
    kind = getattr(kind, '__name__', kind)
    defaults = dict(mlp_kwargs, **widths) \
        if str(kind).split('.')[-1] == mlp_type else widths
    for key, value in defaults.items():
        cfg.setdefault(key, value)
    return cfg


@MODELS.register_module()
class SIGNHead(ClassEmbeddingMixin, TransferMixin, SelfTrainingMixin,
               BaseDecodeHead):
    """Decode head of SIGN: C (``conv_seg``), G, D and M. Its input is the
    SIM output ``(F_x, mu, logvar, z)``; at test time only ``C(F_x)`` runs.

    G and D are registered modules built from ``generator`` /
    ``discriminator`` configs, as mmagic builds its GANs (the head fills in
    their widths; ``models/generators``, ``models/discriminators`` say what
    a replacement must accept). Classifier layouts (``classifier``):

    * ``'shared_trunk'`` (the authors' code): C and D share a trunk
      ``1×1 conv channels → trunk_channels, ReLU, dropout``; C is
      ``conv_seg`` on it and D (default ``PixelLinearDiscriminator``)
      reads the trunk's pixels. D's optimizer trains the trunk, both, and C
      by ``loss_ce_d`` on real features.
    * ``'linear'``: C is a 1×1 conv on ``F_x`` and D (default
      ``PixelMLPDiscriminator``) a separate network on ``F_x``.

    M (:class:`ClassEmbeddingMixin`) is read from ``class_embeddings`` and
    saved in every checkpoint (``decode_head.class_embedding``); a missing
    table file gives a placeholder that a checkpoint's table replaces.

    Args:
        class_embeddings (str): ``.npz`` table (class names + vectors) of
            the model's classes in order.
        unseen_classes (Sequence[str | int], optional): the unseen classes
            (default: set from the training dataset by ``ClassSplitHook``).
        latent_channels (int): channels of ``z`` (SIM ``latent_channels``).
        generator (dict, optional): G's config (default
            ``PixelMLPGenerator``); ``embed_channels``, ``latent_channels``
            and ``out_channels`` are filled in.
        generator_hidden, generator_dropout, generator_out_act: a
            ``PixelMLPGenerator``'s ``hidden_channels``, ``dropout`` and
            ``out_act`` where ``generator`` does not set them.
        classifier (str): ``'shared_trunk'`` or ``'linear'`` (above).
        trunk_channels (int): width of the shared trunk (1024).
        discriminator (dict, optional): D's config (defaults above);
            ``in_channels`` is filled in.
        discriminator_hidden (Sequence[int]): a ``PixelMLPDiscriminator``'s
            ``hidden_channels`` where ``discriminator`` does not set them.
        adversarial (bool): ``False`` builds no D: G learns from the MMD
            alone (ZS3Net's GMMN) and D's optimizer wrapper trains C only.
        loss_kld_weight (float): α of eq. 4 (100).
        loss_mmd_weight (float): β of eq. 7 (50).
        loss_adv_weight (float): weight of the adversarial losses.
        loss_ce_d_weight (float): weight of C's cross-entropy on real
            features in D's loss (``'shared_trunk'`` only; the authors: 1).
        mmd_kernel_variances (Sequence[float]): the *variances* of the MMD's
            Gaussian kernels (the authors' "bandwidths" 2, ..., 60).
        mmd_max_pixels (int): cap on pixels per class per batch for MMD.
        mmd_estimator (str): ``'squared'`` / ``'released'`` (class_mmd_loss).
        adv_d_reduction (str): ``'mean'`` / ``'sum'`` (discriminator_loss).
        gen_unseen_rate (float): prior of the labels sampled for synthetic
            features: ∝ 1 per seen class and ``1 + gen_unseen_rate`` per
            unseen class (the authors: VOC 9, Context 14, COCO-Stuff 59).
        calibration (float): constant subtracted from seen-class logits at
            test time (SPNet-c style); 0 disables it.
        embed_dim (int): width of the placeholder table (missing file).
        held_out_classes (Sequence[str], optional): table rows left out.
        **kwargs: :class:`BaseDecodeHead` arguments (``in_channels``,
            ``channels``, ``num_classes``, ``loss_decode``,
            ``dropout_ratio``: element-wise dropout before C, ...).
    """

    def __init__(self,
                 class_embeddings: str,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 latent_channels: int = 600,
                 generator: Optional[dict] = None,
                 generator_hidden: Sequence[int] = (1024, 960, 864, 784, 720),
                 generator_dropout: Union[float,
                                          Sequence[float]] = (0.1, 0.1, 0.3,
                                                              0.5, 0.5),
                 generator_out_act: Optional[str] = 'sigmoid',
                 classifier: str = 'shared_trunk',
                 trunk_channels: int = 1024,
                 discriminator: Optional[dict] = None,
                 discriminator_hidden: Sequence[int] = (512, ),
                 adversarial: bool = True,
                 loss_kld_weight: float = 100.0,
                 loss_mmd_weight: float = 50.0,
                 loss_adv_weight: float = 1.0,
                 loss_ce_d_weight: float = 1.0,
                 mmd_kernel_variances: Sequence[float] = (2, 5, 10, 20, 40,
                                                          60),
                 mmd_max_pixels: int = 256,
                 mmd_estimator: str = 'squared',
                 adv_d_reduction: str = 'mean',
                 gen_unseen_rate: float = 9.0,
                 calibration: float = 0.0,
                 embed_dim: int = 600,
                 held_out_classes: Optional[Sequence[str]] = None,
                 **kwargs):
        kwargs.setdefault('in_index', 0)
        kwargs.setdefault(
            'loss_decode',
            dict(
                type='CrossEntropyLoss',
                use_sigmoid=False,
                loss_weight=1.0,
                avg_non_ignore=True,
                loss_name='loss_ce'))
        super().__init__(**kwargs)
        if self.in_channels != self.channels:
            raise ValueError('SIGNHead classifies F_x directly: in_channels '
                             f'({self.in_channels}) must equal channels '
                             f'({self.channels}), the SIM channels.')
        for name, value, allowed in [
            ('classifier', classifier, CLASSIFIER_LAYOUTS),
            ('mmd_estimator', mmd_estimator, MMD_ESTIMATORS),
            ('adv_d_reduction', adv_d_reduction, D_REDUCTIONS)
        ]:
            if value not in allowed:
                raise ValueError(f'SIGNHead {name} must be one of '
                                 f'{allowed}, got {value!r}.')
        if gen_unseen_rate is None or gen_unseen_rate <= -1:
            raise ValueError('gen_unseen_rate must be > -1 (unseen prior '
                             f'1 + rate), got {gen_unseen_rate}.')
        self._init_class_embedding(class_embeddings, embed_dim,
                                   held_out_classes, unseen_classes)
        self.latent_channels = latent_channels
        # G, then C's trunk and head, then D: the order of the weights'
        # random initialisation since the first release
        self.generator = MODELS.build(
            _module_cfg(
                generator,
                'PixelMLPGenerator',
                dict(
                    hidden_channels=generator_hidden,
                    dropout=generator_dropout,
                    out_act=generator_out_act),
                embed_channels=self.class_embedding.shape[1],
                latent_channels=latent_channels,
                out_channels=self.channels))
        # element-wise dropout: a generated pixel ([N, C, 1, 1]) and a real
        # feature map get the same kind of noise (mmseg uses Dropout2d)
        self.dropout = nn.Dropout(self.dropout_ratio) \
            if self.dropout_ratio > 0 else None
        self.classifier = classifier
        if classifier == 'shared_trunk':
            self.trunk = nn.Sequential(
                nn.Conv2d(self.channels, trunk_channels, 1),
                nn.ReLU(inplace=True))
            self.conv_seg = nn.Conv2d(trunk_channels, self.num_classes, 1)
            d_type, d_in = 'PixelLinearDiscriminator', trunk_channels
        else:
            self.trunk = nn.Identity()
            d_type, d_in = 'PixelMLPDiscriminator', self.channels
        self.discriminator = MODELS.build(_module_cfg(
            discriminator or dict(type=d_type), 'PixelMLPDiscriminator',
            dict(hidden_channels=discriminator_hidden), in_channels=d_in)) \
            if adversarial else None
        self.loss_kld_weight = loss_kld_weight
        self.loss_mmd_weight = loss_mmd_weight
        self.loss_adv_weight = loss_adv_weight
        self.loss_ce_d_weight = loss_ce_d_weight
        self.mmd_kernel_variances = tuple(mmd_kernel_variances)
        self.mmd_max_pixels = mmd_max_pixels
        self.mmd_estimator = mmd_estimator
        self.adv_d_reduction = adv_d_reduction
        self.gen_unseen_rate = gen_unseen_rate
        self.calibration = calibration

    # -------------------------------------------------------------- forward
    def cls_seg(self, feat: Tensor) -> Tensor:
        """C: ``[B, channels, H, W]`` → logits ``[B, num_classes, H, W]``
        (trunk, dropout, ``conv_seg``)."""
        feat = self.trunk(feat)
        if self.dropout is not None:
            feat = self.dropout(feat)
        return self.conv_seg(feat)

    def forward(self, inputs: Sequence[Tensor]) -> Tensor:
        """``C(F_x)``: logits ``[B, num_classes, H, W]``."""
        return self.cls_seg(inputs[0])

    def predict(self, inputs, batch_img_metas: List[dict], test_cfg) -> Tensor:
        return self.predict_by_feat(
            self.calibrate(self.forward(inputs)), batch_img_metas)

    def _trunk_pixels(self, feats: Tensor) -> Tensor:
        """Trunk and dropout on pixel features ``[N, channels]`` (matrix
        products: a conv over N 1×1 "images" needs a huge cuDNN workspace)."""
        if self.classifier == 'shared_trunk':
            conv = self.trunk[0]
            feats = torch.relu(
                F.linear(feats, conv.weight.flatten(1), conv.bias))
        return feats if self.dropout is None else self.dropout(feats)

    def classify(self, feats: Tensor) -> Tensor:
        """C on pixel features ``[N, channels]`` → logits ``[N, K]``
        (the same function as :meth:`cls_seg` on a feature map)."""
        return F.linear(
            self._trunk_pixels(feats), self.conv_seg.weight.flatten(1),
            self.conv_seg.bias)

    def generate(self, labels: Tensor, z: Tensor) -> Tensor:
        """``G(M(y) ⊕ z)`` for labels ``[N]`` and latents ``[N, L]`` →
        features ``[N, channels]``."""
        return self.generator(self.class_embedding[labels], z)

    def discriminate(self, feats: Tensor) -> Tensor:
        """D's real/fake logits ``[N]`` for features ``[N, channels]``."""
        if self.classifier == 'linear':
            return self.discriminator(feats)
        return self.discriminator(self._trunk_pixels(feats))

    # ---------------------------------------------------------------- utils
    def _labels_at(self, data_samples: SampleList, size) -> Tensor:
        """Ground truth resized (nearest) to the feature map ``[B, h, w]``."""
        seg = self._stack_batch_gt(data_samples).float()
        return F.interpolate(seg, size=size, mode='nearest')[:, 0].long()

    @staticmethod
    def _pixels(x: Tensor) -> Tensor:
        """``[B, C, H, W]`` → ``[B·H·W, C]``."""
        return x.permute(0, 2, 3, 1).reshape(-1, x.shape[1])

    def _cross_entropy(self, logits: Tensor, labels: Tensor) -> Tensor:
        """Mean cross-entropy over the non-ignored pixels (0 if none);
        ``logits [N, K, ...]``, ``labels [N, ...]``."""
        ce = F.cross_entropy(
            logits, labels, ignore_index=self.ignore_index, reduction='none')
        return masked_mean(ce, labels != self.ignore_index)

    # --------------------------------------------------------------- losses
    def loss_segmentation(
            self,
            inputs,
            data_samples: SampleList,
            extra_logits: Sequence[Tensor] = (),
            weights: Optional[Tensor] = None) -> Dict[str, Tensor]:
        """Training step (SIM), eq. 4: ``loss_ce`` (+ ``acc_seg``) of C on
        real features and ``loss_kld`` (α·KL over labelled pixels).
        ``extra_logits``: C's logits at other input scales (DeepLab-v2
        multi-scale training); ``loss_ce`` is then the mean over the
        scale-1 logits, each extra scale and their element-wise max.
        ``weights`` (``[B, H, W]`` at the label resolution, self-training):
        each CE term is ``Σ w·ce / Σ w`` instead of the loss's mean."""
        feats, mu, logvar = inputs[:3]
        logits = self.forward(inputs)
        name = self.loss_decode.loss_name
        if weights is None:
            losses = self.loss_by_feat(logits, data_samples)
        else:  # loss_by_feat's terms, each CE Σ w·ce / Σ w
            labels = self._stack_batch_gt(data_samples)[:, 0]
            up = resize(
                logits,
                labels.shape[-2:],
                mode='bilinear',
                align_corners=self.align_corners)
            losses = {
                name: self._weighted_cross_entropy(up, labels, weights),
                'acc_seg':
                accuracy(up, labels, ignore_index=self.ignore_index)
            }
        if extra_logits:
            fused = torch.stack([logits] + [
                resize(
                    x,
                    logits.shape[2:],
                    mode='bilinear',
                    align_corners=self.align_corners) for x in extra_logits
            ]).max(dim=0).values
            losses[name] = torch.stack([losses[name]] + [
                self.loss_by_feat(x, data_samples)[name] if weights is None
                else self._weighted_cross_entropy(x, labels, weights)
                for x in (*extra_logits, fused)
            ]).mean()
        if weights is not None:  # as loss_decode weighs its own CE
            losses[name] = self.loss_decode.loss_weight * losses[name]
        labels = self._labels_at(data_samples, feats.shape[2:])
        losses['loss_kld'] = self.loss_kld_weight * kl_divergence(
            mu, logvar, labels != self.ignore_index)
        return losses

    def loss_generator(
        self, inputs, data_samples: SampleList
    ) -> Tuple[Dict[str, Tensor], Tensor, Tensor, Tensor]:
        """Training step (G), eq. 5-7 for G: β·MMD per seen class between
        real (detached) features and ``G(M(y), z)`` at the same pixels (z:
        the SIM's own detached latent of the pixel), and the adversarial
        loss. Returns ``(losses, real [N, C], fake [N, C], labels [N])``
        so that D and C can be trained on the same pixels."""
        feats, _, _, z = (t.detach() for t in inputs[:4])
        labels = self._labels_at(data_samples, feats.shape[2:]).flatten()
        idx = sample_per_class(labels, self.mmd_max_pixels, self.ignore_index)
        labels = labels[idx]
        real = self._pixels(feats)[idx]
        fake = self.generate(labels, self._pixels(z)[idx])
        loss_mmd = class_mmd_loss(real, fake, labels,
                                  self.mmd_kernel_variances,
                                  self.mmd_estimator)
        losses = dict(loss_mmd=self.loss_mmd_weight * loss_mmd)
        if self.discriminator is not None:
            losses['loss_adv_g'] = self.loss_adv_weight * adversarial_loss(
                self.discriminate(fake), real=True)
        return losses, real, fake, labels

    def loss_discriminator(self, real: Tensor,
                           fake: Tensor) -> Dict[str, Tensor]:
        """D's side of eq. 6 on real and generated (detached) pixels (none
        without a D)."""
        if self.discriminator is None:
            return {}
        d_real = self.discriminate(real)
        d_fake = self.discriminate(fake.detach())
        return dict(loss_adv_d=self.loss_adv_weight *
                    discriminator_loss(d_real, d_fake, self.adv_d_reduction))

    def loss_classifier_real(self,
                             feats: Tensor,
                             data_samples: SampleList,
                             weight: float,
                             weights: Optional[Tensor] = None) -> Tensor:
        """``weight`` × cross-entropy of C on (detached) real feature maps
        ``[B, C, h, w]`` against the labels at full resolution (weighted
        per pixel by ``weights [B, H, W]`` if given)."""
        labels = self._stack_batch_gt(data_samples)[:, 0]
        logits = self.cls_seg(feats.detach())
        if weights is not None:
            return weight * self._weighted_cross_entropy(
                logits, labels, weights)
        logits = resize(
            logits,
            labels.shape[-2:],
            mode='bilinear',
            align_corners=self.align_corners)
        return weight * self._cross_entropy(logits, labels)

    def loss(self, inputs, batch_data_samples: SampleList,
             train_cfg) -> Dict[str, Tensor]:
        """``EncoderDecoder.loss``: the segmentation losses only (SIGN trains
        through ``ZeroShotEncoderDecoder.train_step``)."""
        return self.loss_segmentation(inputs, batch_data_samples)
