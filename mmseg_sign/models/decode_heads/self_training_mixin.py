"""Self-training targets and losses of a zero-shot decode head (paper
section 3.4; ``SIGNHead``)."""
from typing import Dict, Optional, Tuple

import torch
import torch.nn.functional as F
from mmengine.structures import PixelData
from mmseg.models.utils import resize
from mmseg.utils import SampleList
from torch import Tensor

from ..losses import float32_op
from ..utils import pseudo_label_image


class SelfTrainingMixin:
    """Pseudo labels of a frozen teacher for the ignored pixels (ST / AST)
    and the per-pixel weighted cross-entropy of C on them. Needs the head's
    ``unseen_ids``, ``ignore_index``, ``align_corners``, ``cls_seg`` and
    ``loss_synthetic``."""

    def _weighted_cross_entropy(self, logits: Tensor, labels: Tensor,
                                weights: Tensor) -> Tensor:
        """``Σ w·ce / Σ w`` of ``logits [B, K, h, w]`` (resized to the
        labels) against ``labels [B, H, W]`` with per-pixel ``weights
        [B, H, W]`` (0 on ignored pixels); 0 if no weight is positive.
        With weight 1 on every labelled pixel it is the plain mean."""
        if logits.shape[-2:] != labels.shape[-2:]:
            logits = resize(
                logits,
                labels.shape[-2:],
                mode='bilinear',
                align_corners=self.align_corners)
        ce = F.cross_entropy(
            logits, labels, ignore_index=self.ignore_index, reduction='none')
        weights = weights * (labels != self.ignore_index)
        return (weights * ce).sum() / weights.sum().clamp(min=1e-6)

    def with_targets(self, data_samples: SampleList,
                     targets: Tensor) -> SampleList:
        """Copies of ``data_samples`` whose ``gt_sem_seg`` is ``targets
        [B, H, W]`` (self-training's pseudo-labelled label maps)."""
        out = []
        for sample, target in zip(data_samples, targets):
            sample = sample.clone()
            sample.gt_sem_seg = PixelData(data=target[None])
            out.append(sample)
        return out

    # float32: a half-precision softmax quantises confidences near 1 in steps
    # of 2^-8 (bfloat16), which AST's exp((p - p_max) / T) at T = 0.2 turns
    # into 2 % weight steps, and float16 flushes small ones to 0
    @float32_op
    def pseudo_labels(
        self,
        teacher_logits: Tensor,
        data_samples: SampleList,
        mode: str,
        temperature: float,
        top_p: float,
        top_k: int = 1,
        max_pseudo_ratio: Optional[float] = None,
        candidates: str = 'ignored'
    ) -> Tuple[Tensor, Tensor, Dict[str, Tensor]]:
        """Self-training targets of a batch (section 3.4).

        Args:
            teacher_logits: ``[B, K, H, W]`` at the label resolution.
            max_pseudo_ratio: if set, the pseudo-labelled pixels' summed
                weight in the batch is scaled down to at most this many
                times the number of seen-labelled pixels (None: eq. 16
                alone, the paper).
            candidates: AST's pixels (:func:`pseudo_label_image`).

        Returns:
            ``(targets [B, H, W], weights [B, H, W], stats)``; ``stats``
            (logged) has the number of pseudo-labelled pixels kept
            ``st_pixels``, their mean weight ``st_weight`` (after the
            ratio cap), mean confidence ``st_confidence`` and the cap's
            scale ``st_scale`` (1: not capped).
        """
        labels = self._stack_batch_gt(data_samples)[:, 0]
        probs = teacher_logits.softmax(dim=1)
        unseen = self.unseen_ids.to(labels.device)
        targets, weights, confs = [], [], []
        for prob, label, sample in zip(probs, labels, data_samples):
            valid = torch.zeros_like(label, dtype=torch.bool)
            h, w = sample.metainfo.get('img_shape', label.shape)
            valid[:h, :w] = True  # padding is at the bottom / right
            target, weight, conf = pseudo_label_image(prob, label, unseen,
                                                      valid, mode, temperature,
                                                      top_p, self.ignore_index,
                                                      top_k, candidates)
            targets.append(target)
            weights.append(weight)
            confs.append(conf)
        targets, weights = torch.stack(targets), torch.stack(weights)
        confs = torch.cat(confs)
        pseudo = (labels == self.ignore_index) & \
            (targets != self.ignore_index)
        scale = probs.new_ones(())
        if max_pseudo_ratio is not None:
            budget = max_pseudo_ratio * (labels != self.ignore_index).sum()
            total = weights[pseudo].sum()
            if total > budget:
                scale = budget / total
                weights = torch.where(pseudo, weights * scale, weights)
        pseudo_w = weights[pseudo]
        zero = probs.new_zeros(())
        stats = dict(
            st_pixels=probs.new_tensor(float(confs.numel())),
            st_weight=pseudo_w.mean() if pseudo_w.numel() else zero,
            st_confidence=confs.mean() if confs.numel() else zero,
            st_scale=scale.float())
        return targets, weights, stats

    def loss_self_train(self,
                        inputs,
                        targets: Tensor,
                        weights: Tensor,
                        synth_weight: float = 1.0) -> Dict[str, Tensor]:
        """Weighted cross-entropy of C on real features against seen labels
        and pseudo labels (``Σ w·ce / Σ w``), plus ``synth_weight`` ×
        ``loss_ce_synth`` (0 leaves it out)."""
        feats = inputs[0]
        losses = dict(
            loss_ce_st=self._weighted_cross_entropy(
                self.cls_seg(feats), targets, weights))
        if synth_weight:
            num = feats.shape[0] * feats.shape[2] * feats.shape[3]
            losses['loss_ce_synth'] = self.loss_synthetic(
                num, feats, synth_weight)
        return losses
