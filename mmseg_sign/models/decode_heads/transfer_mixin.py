"""The transfer stage's losses of a zero-shot decode head: C on synthetic
features of sampled labels (paper eq. 8-9; ``SIGNHead``)."""
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from mmseg.utils import SampleList
from torch import Tensor


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

    def loss_synthetic(self,
                       num: int,
                       like: Tensor,
                       weight: float = 1.0,
                       latent: Optional[Tensor] = None) -> Tensor:
        """``loss_ce_synth`` (eq. 8): ``weight`` × CE of C on ``num``
        features ``G(M(ŷ), z)`` for labels ŷ drawn by
        :meth:`sample_pseudo_labels`; ``z ~ N(0, I)`` (the release), or
        ``latent`` ``[num, latent_channels]`` when given (the SIM's latent
        of real pixels: the transfer stage's ``latent='posterior'``). G
        gets no gradient."""
        if latent is not None and tuple(
                latent.shape) != (num, self.latent_channels):
            raise ValueError(
                f'loss_synthetic: latent must be [{num}, '
                f'{self.latent_channels}] (one z per synthetic feature), '
                f'got {list(latent.shape)}.')
        pseudo = self.sample_pseudo_labels(num, like.device)
        with torch.no_grad():
            z = torch.randn(num, self.latent_channels, device=like.device,
                            dtype=like.dtype) if latent is None \
                else latent.detach().to(like.dtype)
            fake = self.generate(pseudo, z)
        return weight * F.cross_entropy(self.classify(fake), pseudo)

    def loss_transfer(self,
                      inputs,
                      data_samples: SampleList,
                      real_weight: float = 1.0,
                      synth_weight: float = 1.0,
                      latent: str = 'prior') -> Dict[str, Tensor]:
        """Transfer step, eq. 9 (``mode='classifier'``): ``loss_ce`` of C on
        real (frozen) features and ``loss_ce_synth`` (one synthetic feature
        per feature pixel; ``latent='posterior'``: each fed that pixel's z,
        ``inputs[3]``)."""
        feats = inputs[0].detach()
        num = feats.shape[0] * feats.shape[2] * feats.shape[3]
        z = self.posterior_latent(inputs) if latent == 'posterior' else None
        return dict(
            loss_ce=self.loss_classifier_real(feats, data_samples,
                                              real_weight),
            loss_ce_synth=self.loss_synthetic(num, feats, synth_weight, z))

    @staticmethod
    def posterior_latent(inputs) -> Tensor:
        """The neck's latent ``z`` (``inputs[3]``, ``[B, L, H, W]``) as
        ``[B·H·W, L]`` (detached), one z per feature pixel."""
        z = inputs[3].detach()
        return z.permute(0, 2, 3, 1).reshape(-1, z.shape[1])
