"""SIGNHead: classifier C, generator G, discriminator D and the frozen
word-embedding mapping M (paper section 3.2, DESIGN.md §3.2-3.3)."""
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmseg.models.decode_heads.decode_head import BaseDecodeHead
from mmseg.registry import MODELS
from mmseg.utils import SampleList
from ...datasets.zero_shot import resolve_split
from ...embeddings import load_class_embeddings
from ..losses import adversarial_loss, gaussian_mmd, kl_divergence
from ..utils import pseudo_label_image


def mlp(dims: Sequence[int], dropout: float = 0.0) -> nn.Sequential:
    """Per-pixel MLP on ``[N, dims[0]]``: Linear + LeakyReLU(0.2) (+
    dropout) between layers, a plain Linear at the end."""
    layers = []
    for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(d_in, d_out))
        if i < len(dims) - 2:
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers)


@MODELS.register_module()
class SIGNHead(BaseDecodeHead):
    """Decode head of SIGN. Its input is the SIM output
    ``(F_x, mu, logvar)``; at test time only ``C(F_x)`` runs.

    Args:
        class_embeddings (str): ``.npz`` table from
            ``tools/build_class_embeddings.py`` (class names + vectors); it
            must list the model's classes in order.
        unseen_classes (Sequence[str | int], optional): the unseen classes.
            Default: set from the training dataset's metainfo when training
            starts (``SIGNStageHook``), so the split has one source.
        latent_channels (int): channels of ``z`` (SIM ``latent_channels``).
        generator_hidden (Sequence[int]): hidden sizes of G.
        generator_dropout (float): dropout between G's layers.
        discriminator_hidden (Sequence[int]): hidden sizes of D.
        loss_kld_weight (float): α of eq. 4 (100).
        loss_mmd_weight (float): β of eq. 7 (50).
        loss_adv_weight (float): weight of the adversarial losses.
        mmd_sigmas (Sequence[float]): Gaussian kernel bandwidths.
        mmd_max_pixels (int): cap on pixels per class per batch for MMD.
        synth_unseen_ratio (float): share of unseen classes among the
            pseudo labels of the transfer stage.
        calibration (float): constant subtracted from seen-class logits at
            test time (SPNet-c style); 0 disables it.
        **kwargs: :class:`BaseDecodeHead` arguments (``in_channels``,
            ``channels``, ``num_classes``, ``loss_decode``, ...).
    """

    def __init__(self,
                 class_embeddings: str,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 latent_channels: int = 600,
                 generator_hidden: Sequence[int] = (1024, 960, 864, 784,
                                                    720),
                 generator_dropout: float = 0.5,
                 discriminator_hidden: Sequence[int] = (512, ),
                 loss_kld_weight: float = 100.0,
                 loss_mmd_weight: float = 50.0,
                 loss_adv_weight: float = 1.0,
                 mmd_sigmas: Sequence[float] = (2, 5, 10, 20, 40, 80),
                 mmd_max_pixels: int = 256,
                 synth_unseen_ratio: float = 0.5,
                 calibration: float = 0.0,
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
        names, table = self._load_table(class_embeddings)
        self.class_names = tuple(names)
        # M: frozen mapping from a class index to its word embedding
        self.register_buffer('class_embedding', torch.from_numpy(table))
        self.register_buffer('unseen_mask',
                             torch.zeros(self.num_classes, dtype=torch.bool))
        self.unseen_classes = unseen_classes
        if unseen_classes is not None:
            self.set_class_split(unseen_classes)
        embed_dim = table.shape[1]
        self.latent_channels = latent_channels
        self.generator = mlp(
            [embed_dim + latent_channels, *generator_hidden, self.channels],
            generator_dropout)
        self.discriminator = mlp([self.channels, *discriminator_hidden, 1])
        self.loss_kld_weight = loss_kld_weight
        self.loss_mmd_weight = loss_mmd_weight
        self.loss_adv_weight = loss_adv_weight
        self.mmd_sigmas = tuple(mmd_sigmas)
        self.mmd_max_pixels = mmd_max_pixels
        self.synth_unseen_ratio = synth_unseen_ratio
        self.calibration = calibration

    def _load_table(self, path: str) -> Tuple[List[str], np.ndarray]:
        data = np.load(path)
        names = [str(n) for n in data['classes']] if 'classes' in data \
            else None
        if names is None or len(names) != self.num_classes:
            raise ValueError(
                f'{path}: the class-embedding table has '
                f'{None if names is None else len(names)} classes but the '
                f'head has num_classes={self.num_classes}; rebuild it for '
                'this dataset with tools/build_class_embeddings.py.')
        return names, load_class_embeddings(path, names)

    # ---------------------------------------------------------------- split
    def set_class_split(self, unseen: Sequence[Union[str, int]],
                        classes: Optional[Sequence[str]] = None) -> None:
        """Mark the unseen classes; ``classes`` (the dataset's) must match
        the embedding table's class list when given."""
        if classes is not None and tuple(classes) != self.class_names:
            raise ValueError(
                'The dataset classes differ from the class-embedding table '
                f'({len(classes)} vs {len(self.class_names)} classes; first '
                'difference: ' + next(
                    (f'#{i}: {a!r} vs {b!r}' for i, (a, b) in enumerate(
                        zip(classes, self.class_names)) if a != b),
                    'length') + '). Build the table for this dataset.')
        _, unseen_names = resolve_split(self.class_names, unseen=unseen)
        mask = torch.tensor([c in unseen_names for c in self.class_names])
        self.unseen_mask.copy_(mask)

    @property
    def seen_ids(self) -> Tensor:
        return (~self.unseen_mask).nonzero().flatten()

    @property
    def unseen_ids(self) -> Tensor:
        return self.unseen_mask.nonzero().flatten()

    # -------------------------------------------------------------- forward
    def forward(self, inputs: Tuple[Tensor, Tensor, Tensor]) -> Tensor:
        """``C(F_x)``: logits ``[B, num_classes, H, W]``."""
        return self.cls_seg(inputs[0])

    def predict(self, inputs, batch_img_metas: List[dict],
                test_cfg) -> Tensor:
        logits = self.forward(inputs)
        if self.calibration:
            logits = logits - self.calibration * (~self.unseen_mask).to(
                logits.dtype)[None, :, None, None]
        return self.predict_by_feat(logits, batch_img_metas)

    @staticmethod
    def reparameterize(mu: Tensor, logvar: Tensor) -> Tensor:
        """``z = mu + exp(logvar / 2) · ε`` (VAE reparameterisation)."""
        return mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)

    def generate(self, labels: Tensor, z: Tensor) -> Tensor:
        """``G(M(y) ⊕ z)`` for labels ``[N]`` and latents ``[N, L]`` →
        features ``[N, channels]``."""
        return self.generator(torch.cat([self.class_embedding[labels], z], 1))

    def discriminate(self, feats: Tensor) -> Tensor:
        """D's real/fake logits ``[N]`` for features ``[N, channels]``."""
        return self.discriminator(feats).squeeze(1)

    # ---------------------------------------------------------------- utils
    def _labels_at(self, data_samples: SampleList, size) -> Tensor:
        """Ground truth resized (nearest) to the feature map ``[B, h, w]``."""
        seg = self._stack_batch_gt(data_samples).float()
        return F.interpolate(seg, size=size, mode='nearest')[:, 0].long()

    @staticmethod
    def _pixels(x: Tensor) -> Tensor:
        """``[B, C, H, W]`` → ``[B·H·W, C]``."""
        return x.permute(0, 2, 3, 1).reshape(-1, x.shape[1])

    def _sample_per_class(self, labels: Tensor) -> Tensor:
        """Indices into the flattened labels: for each labelled class, at
        most ``mmd_max_pixels`` random pixels."""
        picked = []
        for c in labels[labels != self.ignore_index].unique():
            idx = (labels == c).nonzero().flatten()
            if idx.numel() > self.mmd_max_pixels:
                idx = idx[torch.randperm(
                    idx.numel(), device=idx.device)[:self.mmd_max_pixels]]
            picked.append(idx)
        if not picked:
            return labels.new_zeros(0)
        return torch.cat(picked)

    # --------------------------------------------------------------- losses
    def loss_segmentation(self, inputs, data_samples: SampleList
                          ) -> Dict[str, Tensor]:
        """Training step (SIM), eq. 4: ``loss_ce`` (+ ``acc_seg``) of C on
        real features and ``loss_kld`` (α·KL over labelled pixels)."""
        feats, mu, logvar = inputs
        losses = self.loss_by_feat(self.forward(inputs), data_samples)
        labels = self._labels_at(data_samples, feats.shape[2:])
        losses['loss_kld'] = self.loss_kld_weight * kl_divergence(
            mu, logvar, labels != self.ignore_index)
        return losses

    def loss_generator(self, inputs, data_samples: SampleList
                       ) -> Tuple[Dict[str, Tensor], Tensor, Tensor]:
        """Training step (G), eq. 5-7 for G: β·MMD per seen class between
        real (detached) and generated features at the same pixels, and the
        adversarial loss. Returns ``(losses, real, fake)`` so that D can be
        trained on the same pixels."""
        feats, mu, logvar = (t.detach() for t in inputs)
        labels = self._labels_at(data_samples, feats.shape[2:]).flatten()
        idx = self._sample_per_class(labels)
        labels = labels[idx]
        real = self._pixels(feats)[idx]
        z = self.reparameterize(self._pixels(mu)[idx],
                                self._pixels(logvar)[idx])
        fake = self.generate(labels, z)
        loss_mmd = fake.new_zeros(()) + 0 * fake.sum()
        for c in labels.unique():
            sel = labels == c
            loss_mmd = loss_mmd + gaussian_mmd(real[sel], fake[sel],
                                               self.mmd_sigmas)
        losses = dict(
            loss_mmd=self.loss_mmd_weight * loss_mmd,
            loss_adv_g=self.loss_adv_weight *
            adversarial_loss(self.discriminate(fake), real=True))
        return losses, real, fake

    def loss_discriminator(self, real: Tensor,
                           fake: Tensor) -> Dict[str, Tensor]:
        """D's side of eq. 6: real features → 1, generated → 0."""
        loss = 0.5 * (
            adversarial_loss(self.discriminate(real), real=True) +
            adversarial_loss(self.discriminate(fake.detach()), real=False))
        return dict(loss_adv_d=self.loss_adv_weight * loss)

    def sample_pseudo_labels(self, num: int, device) -> Tensor:
        """``num`` class indices: unseen classes share
        ``synth_unseen_ratio`` of the probability, seen classes the rest."""
        unseen = self.unseen_mask.to(device)
        if not unseen.any():
            raise RuntimeError(
                'SIGNHead has no unseen classes: set `unseen_classes` or let '
                'SIGNStageHook copy them from the dataset metainfo.')
        probs = torch.where(unseen, self.synth_unseen_ratio / unseen.sum(),
                            (1 - self.synth_unseen_ratio) /
                            (~unseen).sum().clamp(min=1))
        return torch.multinomial(probs.float(), num, replacement=True)

    def loss_synthetic(self, num: int, like: Tensor) -> Tensor:
        """``loss_ce_synth`` (eq. 8): C on ``num`` features ``G(M(ŷ), z)``,
        ``z ~ N(0, I)``, for sampled labels ŷ that include unseen classes.
        G is frozen (no gradient reaches it)."""
        pseudo = self.sample_pseudo_labels(num, like.device)
        with torch.no_grad():
            z = torch.randn(num, self.latent_channels, device=like.device,
                            dtype=like.dtype)
            fake = self.generate(pseudo, z)
        logits = self.cls_seg(fake[:, :, None, None])[:, :, 0, 0]
        return F.cross_entropy(logits, pseudo)

    def loss_transfer(self, inputs, data_samples: SampleList
                      ) -> Dict[str, Tensor]:
        """Transfer step, eq. 9: ``loss_ce`` of C on real (frozen) features
        and ``loss_ce_synth`` (one synthetic feature per feature pixel)."""
        feats = inputs[0].detach()
        losses = self.loss_by_feat(self.cls_seg(feats), data_samples)
        num = feats.shape[0] * feats.shape[2] * feats.shape[3]
        losses['loss_ce_synth'] = self.loss_synthetic(num, feats)
        return losses

    def pseudo_labels(self, teacher_logits: Tensor,
                      data_samples: SampleList, mode: str,
                      temperature: float, top_p: float
                      ) -> Tuple[Tensor, Tensor, Dict[str, Tensor]]:
        """Self-training targets of a batch (section 3.4).

        Args:
            teacher_logits: ``[B, K, H, W]`` at the label resolution.

        Returns:
            ``(targets [B, H, W], weights [B, H, W], stats)``; ``stats``
            (logged) has the number of pseudo-labelled pixels kept
            ``st_pixels``, their mean weight ``st_weight`` and mean
            confidence ``st_confidence``.
        """
        labels = self._stack_batch_gt(data_samples)[:, 0]
        probs = teacher_logits.softmax(dim=1)
        unseen = self.unseen_ids.to(labels.device)
        targets, weights, confs, pseudo_w = [], [], [], []
        for prob, label, sample in zip(probs, labels, data_samples):
            valid = torch.zeros_like(label, dtype=torch.bool)
            h, w = sample.metainfo.get('img_shape', label.shape)
            valid[:h, :w] = True  # padding is at the bottom / right
            target, weight, conf = pseudo_label_image(
                prob, label, unseen, valid, mode, temperature, top_p,
                self.ignore_index)
            targets.append(target)
            weights.append(weight)
            confs.append(conf)
            pseudo_w.append(weight[(label == self.ignore_index)
                                   & (target != self.ignore_index)])
        confs, pseudo_w = torch.cat(confs), torch.cat(pseudo_w)
        zero = probs.new_zeros(())
        stats = dict(
            st_pixels=probs.new_tensor(float(confs.numel())),
            st_weight=pseudo_w.mean() if pseudo_w.numel() else zero,
            st_confidence=confs.mean() if confs.numel() else zero)
        return torch.stack(targets), torch.stack(weights), stats

    def loss_self_train(self, inputs, targets: Tensor,
                        weights: Tensor) -> Dict[str, Tensor]:
        """Weighted cross-entropy of C on real features against seen labels
        and pseudo labels (``Σ w·ce / Σ w``), plus ``loss_ce_synth`` so that
        the unseen classes stay calibrated."""
        feats = inputs[0]
        logits = F.interpolate(
            self.cls_seg(feats), size=targets.shape[-2:], mode='bilinear',
            align_corners=self.align_corners)
        ce = F.cross_entropy(
            logits, targets, ignore_index=self.ignore_index,
            reduction='none')
        loss = (weights * ce).sum() / weights.sum().clamp(min=1e-6)
        num = feats.shape[0] * feats.shape[2] * feats.shape[3]
        return dict(
            loss_ce_st=loss, loss_ce_synth=self.loss_synthetic(num, feats))

    def loss(self, inputs, batch_data_samples: SampleList,
             train_cfg) -> Dict[str, Tensor]:
        """Single-optimizer entry point (``EncoderDecoder.loss``): the
        segmentation losses only. SIGN trains through
        ``ZeroShotEncoderDecoder.train_step``."""
        return self.loss_segmentation(inputs, batch_data_samples)
