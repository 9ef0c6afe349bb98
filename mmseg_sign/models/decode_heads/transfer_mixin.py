"""The transfer stage's losses of a zero-shot decode head: C on synthetic
features of sampled labels (paper eq. 8-9; ``SIGNHead``)."""
from typing import Dict

import torch
import torch.nn.functional as F
from torch import Tensor

from mmseg.utils import SampleList


class TransferMixin:
    """Needs the head's ``unseen_mask``, ``gen_unseen_rate``,
    ``latent_channels``, ``generate``, ``classify`` and
    ``loss_classifier_real``."""

    def sample_pseudo_labels(self, num: int, device) -> Tensor:
        """``num`` class indices drawn i.i.d. with prior ∝ 1 per seen class
        and ``1 + gen_unseen_rate`` per unseen class."""
        unseen = self.unseen_mask.to(device)
        if not unseen.any():
            raise RuntimeError(
                'SIGNHead has no unseen classes: set `unseen_classes` or let '
                'ClassSplitHook copy them from the dataset metainfo.')
        probs = 1.0 + self.gen_unseen_rate * unseen.float()
        return torch.multinomial(probs, num, replacement=True)

    def loss_synthetic(self, num: int, like: Tensor,
                       weight: float = 1.0) -> Tensor:
        """``loss_ce_synth`` (eq. 8): ``weight`` × CE of C on ``num``
        features ``G(M(ŷ), z)``, ``z ~ N(0, I)``, for labels ŷ drawn by
        :meth:`sample_pseudo_labels`. G gets no gradient."""
        pseudo = self.sample_pseudo_labels(num, like.device)
        with torch.no_grad():
            z = torch.randn(num, self.latent_channels, device=like.device,
                            dtype=like.dtype)
            fake = self.generate(pseudo, z)
        return weight * F.cross_entropy(self.classify(fake), pseudo)

    def loss_transfer(self, inputs, data_samples: SampleList,
                      real_weight: float = 1.0, synth_weight: float = 1.0
                      ) -> Dict[str, Tensor]:
        """Transfer step, eq. 9 (``mode='classifier'``): ``loss_ce`` of C on
        real (frozen) features and ``loss_ce_synth`` (one synthetic feature
        per feature pixel)."""
        feats = inputs[0].detach()
        num = feats.shape[0] * feats.shape[2] * feats.shape[3]
        return dict(
            loss_ce=self.loss_classifier_real(feats, data_samples,
                                              real_weight),
            loss_ce_synth=self.loss_synthetic(num, feats, synth_weight))
