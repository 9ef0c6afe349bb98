"""SIGNHead: classifier C, generator G, discriminator D and the frozen
word-embedding mapping M (paper section 3.2; how the stages use them is
described in docs/reproduction.md)."""
import logging
import os
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmengine.logging import print_log
from mmengine.structures import PixelData

from mmseg.models.decode_heads.decode_head import BaseDecodeHead
from mmseg.registry import MODELS
from mmseg.utils import SampleList
from ...datasets.zero_shot import resolve_split
from ...embeddings import read_class_embeddings
from mmseg.models.losses import accuracy
from mmseg.models.utils import resize
from ..losses import (adversarial_loss, gaussian_mmd, kl_divergence,
                      masked_mean)
from ..utils import pseudo_label_image


def mlp(dims: Sequence[int], dropout: Union[float, Sequence[float]] = 0.0,
        out_act: Optional[str] = None) -> nn.Sequential:
    """Per-pixel MLP on ``[N, dims[0]]``: Linear + LeakyReLU(0.2) (+
    dropout, one rate for all hidden layers or one per hidden layer)
    between layers, then ``out_act`` (``'sigmoid'`` or None) at the end."""
    n_hidden = len(dims) - 2
    rates = [dropout] * n_hidden if isinstance(dropout, (int, float)) \
        else list(dropout)
    if len(rates) != n_hidden:
        raise ValueError(f'{len(rates)} dropout rates given for {n_hidden} '
                         'hidden layers.')
    layers = []
    for i, (d_in, d_out) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(d_in, d_out))
        if i < n_hidden:
            layers.append(nn.LeakyReLU(0.2, inplace=True))
            if rates[i] > 0:
                layers.append(nn.Dropout(rates[i]))
    if out_act == 'sigmoid':
        layers.append(nn.Sigmoid())
    elif out_act is not None:
        raise ValueError(f"out_act must be 'sigmoid' or None, got "
                         f'{out_act!r}.')
    return nn.Sequential(*layers)


CLASSIFIER_LAYOUTS = ('shared_trunk', 'linear')


@MODELS.register_module()
class SIGNHead(BaseDecodeHead):
    """Decode head of SIGN. Its input is the SIM output
    ``(F_x, mu, logvar, z)``; at test time only ``C(F_x)`` runs.

    Classifier layouts (``classifier``):

    * ``'shared_trunk'`` (the authors' code): C and D share a trunk
      ``1×1 conv channels → trunk_channels, ReLU, dropout``; C is
      ``conv_seg`` (``trunk_channels → num_classes``) and D's GAN head is
      ``discriminator`` (``trunk_channels → 1``). D's optimizer trains the
      trunk, both heads, and C by ``loss_ce_d`` on real features.
    * ``'linear'``: C is a 1×1 conv on ``F_x`` (trained with the
      segmentor) and D a separate MLP (``discriminator_hidden``), as the
      paper draws them.

    The class-embedding table M is read from ``class_embeddings`` when the
    head is built, and it is also saved in every checkpoint (the buffer
    ``decode_head.class_embedding``). So that a checkpoint alone is enough
    for inference (``mmseg.apis.init_model(config, checkpoint)`` or
    ``MMSegInferencer`` from any directory, where a relative table path
    does not resolve), a table file that does not exist is not an error at
    build time: the head warns, builds a zero placeholder table
    ``[num_classes, embed_dim]`` and waits for the checkpoint, whose
    ``class_embedding`` replaces it (its shape is taken from the
    checkpoint; G's input layer is rebuilt if the width differs).
    Until then :meth:`require_table` raises the reader's error (naming the
    file and how to build it); training calls it, so training never runs
    on a placeholder. ``class_names`` is None in that case: the class
    names of a loaded checkpoint are ``meta.dataset_meta.classes``
    (``init_model`` puts them in ``model.dataset_meta``). A path that
    exists but is unreadable (or ``None``) still fails at build time.

    Args:
        class_embeddings (str): ``.npz`` table (class names + vectors); it
            must list the model's classes in order. If the file does not
            exist, the table must come from a checkpoint (above).
        held_out_classes (Sequence[str], optional): rows of the table left
            out of the model (as the dataset's ``held_out_classes``), e.g.
            to add them by name later (``tools/add_classes.py``).
        embed_dim (int): width of the placeholder table built when the
            ``class_embeddings`` file is missing (ignored otherwise; a
            loaded checkpoint's table sets the real width).
        unseen_classes (Sequence[str | int], optional): the unseen classes.
            Default: set from the training dataset's metainfo when training
            starts (``SIGNStageHook``), so the split has one source.
        latent_channels (int): channels of ``z`` (SIM ``latent_channels``).
        generator_hidden (Sequence[int]): hidden sizes of G.
        generator_dropout (float | Sequence[float]): dropout after each of
            G's hidden layers (the authors: 0.1, 0.1, 0.3, 0.5, 0.5).
        generator_out_act (str | None): G's output activation; ``'sigmoid'``
            matches the range of the SIM's ``F_x``.
        classifier (str): ``'shared_trunk'`` or ``'linear'`` (above).
        trunk_channels (int): width of the shared trunk (1024).
        discriminator_hidden (Sequence[int]): hidden sizes of D in the
            ``'linear'`` layout.
        loss_kld_weight (float): α of eq. 4 (100).
        loss_mmd_weight (float): β of eq. 7 (50).
        loss_adv_weight (float): weight of the adversarial losses.
        loss_ce_d_weight (float): weight of C's cross-entropy on real
            features in D's loss (``'shared_trunk'`` only; the authors: 1).
        mmd_kernel_variances (Sequence[float]): the *variances* ``v`` of
            the Gaussian kernels ``exp(-d² / (2v))`` summed in the MMD (the
            authors' "bandwidths" 2, 5, 10, 20, 40, 60 are variances).
        mmd_max_pixels (int): cap on pixels per class per batch for MMD.
        mmd_estimator (str): ``'squared'``: the biased MMD² of each class,
            summed over classes (eq. 5); ``'released'``: the authors'
            ``sqrt(½·MMD²)`` of each class, averaged over classes
            (authors_recipe R3).
        adv_d_reduction (str): D's loss is ``'mean'`` (½ real + ½ fake) or
            ``'sum'`` (real + fake, the authors' code) of the two terms.
        gen_unseen_rate (float): prior of the labels sampled for synthetic
            features: ∝ 1 per seen class and ``1 + gen_unseen_rate`` per
            unseen class (the authors: VOC 9, Context 14, COCO-Stuff 59).
        calibration (float): constant subtracted from seen-class logits at
            test time (SPNet-c style); 0 disables it.
        **kwargs: :class:`BaseDecodeHead` arguments (``in_channels``,
            ``channels``, ``num_classes``, ``loss_decode``,
            ``dropout_ratio``: element-wise dropout before C, ...).
    """

    def __init__(self,
                 class_embeddings: str,
                 unseen_classes: Optional[Sequence[Union[str, int]]] = None,
                 latent_channels: int = 600,
                 generator_hidden: Sequence[int] = (1024, 960, 864, 784,
                                                    720),
                 generator_dropout: Union[float, Sequence[float]] = (
                     0.1, 0.1, 0.3, 0.5, 0.5),
                 generator_out_act: Optional[str] = 'sigmoid',
                 classifier: str = 'shared_trunk',
                 trunk_channels: int = 1024,
                 discriminator_hidden: Sequence[int] = (512, ),
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
        if classifier not in CLASSIFIER_LAYOUTS:
            raise ValueError(f'SIGNHead classifier must be one of '
                             f'{CLASSIFIER_LAYOUTS}, got {classifier!r}.')
        if gen_unseen_rate is None or gen_unseen_rate <= -1:
            raise ValueError('gen_unseen_rate must be > -1 (unseen prior '
                             f'1 + rate), got {gen_unseen_rate}.')
        self.held_out_classes = tuple(held_out_classes or ())
        names, table = self._load_table(class_embeddings, embed_dim)
        self.class_names = None if names is None else tuple(names)
        # M: frozen mapping from a class index to its word embedding
        self.register_buffer('class_embedding', torch.from_numpy(table))
        self.register_buffer('unseen_mask',
                             torch.zeros(self.num_classes, dtype=torch.bool))
        self.unseen_classes = unseen_classes
        if unseen_classes is not None and names is not None:
            # (placeholder table: the checkpoint's unseen_mask is the split)
            self.set_class_split(unseen_classes)
        embed_dim = table.shape[1]
        self.latent_channels = latent_channels
        self.generator = mlp(
            [embed_dim + latent_channels, *generator_hidden, self.channels],
            generator_dropout, generator_out_act)
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
            self.discriminator = nn.Conv2d(trunk_channels, 1, 1)
        else:
            self.trunk = nn.Identity()
            self.discriminator = mlp([self.channels, *discriminator_hidden,
                                      1])
        self.loss_kld_weight = loss_kld_weight
        self.loss_mmd_weight = loss_mmd_weight
        self.loss_adv_weight = loss_adv_weight
        self.loss_ce_d_weight = loss_ce_d_weight
        self.mmd_kernel_variances = tuple(mmd_kernel_variances)
        self.mmd_max_pixels = mmd_max_pixels
        if mmd_estimator not in ('squared', 'released'):
            raise ValueError("mmd_estimator must be 'squared' or "
                             f"'released', got {mmd_estimator!r}.")
        if adv_d_reduction not in ('mean', 'sum'):
            raise ValueError("adv_d_reduction must be 'mean' or 'sum', got "
                             f'{adv_d_reduction!r}.')
        self.mmd_estimator = mmd_estimator
        self.adv_d_reduction = adv_d_reduction
        self.gen_unseen_rate = gen_unseen_rate
        self.calibration = calibration

    def _load_table(self, path: str, embed_dim: int = 600
                    ) -> Tuple[Optional[List[str]], np.ndarray]:
        """The table file's class names and ``[K, D]`` table; ``(None,
        zeros [num_classes, embed_dim])`` if the file does not exist (the
        table must then come from a checkpoint, see the class docstring).
        """
        self._table_from_checkpoint = False
        self._table_error = None
        try:
            # the project's one validated reader: a missing, empty,
            # truncated or non-npz file (or None) gets a message naming it
            # and the fix
            names, table = read_class_embeddings(path)
        except FileNotFoundError as err:
            if path is None or os.path.isdir(os.fspath(path)):
                raise
            self._table_from_checkpoint = True
            self._table_error = str(err)
            print_log(
                f'SIGNHead: the class-embedding table {path} does not exist '
                f'(cwd: {os.getcwd()}); a zero placeholder '
                f'[{self.num_classes}, {embed_dim}] is used and the table '
                'will come from the checkpoint (decode_head.class_embedding)'
                '. Inference needs a checkpoint; training needs the file.',
                logger='current', level=logging.WARNING)
            return None, np.zeros((self.num_classes, embed_dim), np.float32)
        if self.held_out_classes:
            stripped = [n.strip() for n in names]
            unknown = [c for c in self.held_out_classes
                       if c.strip() not in stripped]
            if unknown:
                raise ValueError(
                    f'{path}: held_out_classes {unknown} are not in the '
                    f'class-embedding table ({", ".join(names)}).')
            held = {c.strip() for c in self.held_out_classes}
            keep = [i for i, n in enumerate(stripped) if n not in held]
            names, table = [names[i] for i in keep], table[keep]
        if len(names) != self.num_classes:
            raise ValueError(
                f'{path}: the class-embedding table has {len(names)} '
                f'classes but the head has num_classes={self.num_classes}; '
                'rebuild it for this dataset with '
                'tools/build_class_embeddings.py (or '
                'tools/dataset_converters/cagnet_word_vectors.py).')
        return names, table

    def require_table(self) -> None:
        """Raise (``FileNotFoundError``, naming the table file and how to
        build it) if the class-embedding table is still the placeholder of
        a missing file, i.e. neither the file nor a checkpoint gave it.
        Training must call this before its first step."""
        if self._table_from_checkpoint:
            raise FileNotFoundError(
                f'{self._table_error} SIGNHead has only a placeholder '
                'class-embedding table (the file is missing and no '
                'checkpoint with decode_head.class_embedding was loaded); '
                'training needs the table file.')

    def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                              strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a placeholder table takes the checkpoint's table (and its width)
        saved = state_dict.get(prefix + 'class_embedding')
        if self._table_from_checkpoint and isinstance(saved, Tensor) and \
                saved.dim() == 2 and saved.shape[0] == self.num_classes:
            if saved.shape != self.class_embedding.shape:
                self.class_embedding = self.class_embedding.new_zeros(
                    saved.shape)
                first = self.generator[0]
                width = saved.shape[1] + self.latent_channels
                if first.in_features != width:
                    self.generator[0] = nn.Linear(
                        width, first.out_features).to(first.weight.device)
            self._table_from_checkpoint = False
            self._table_error = None
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)

    # ---------------------------------------------------------------- split
    def set_class_split(self, unseen: Sequence[Union[str, int]],
                        classes: Optional[Sequence[str]] = None) -> None:
        """Mark the unseen classes; ``classes`` (the dataset's) must match
        the embedding table's class list when given. Names compare after
        ``str.strip()`` (mmseg's ADE20K class ``'bed '`` is ``'bed'`` in a
        table built from a class file)."""
        def _strip(names):
            return tuple(str(n).strip() for n in names)

        if classes is not None and _strip(classes) != _strip(
                self.class_names):
            raise ValueError(
                'The dataset classes differ from the class-embedding table '
                f'({len(classes)} vs {len(self.class_names)} classes; first '
                'difference: ' + next(
                    (f'#{i}: {a!r} vs {b!r}' for i, (a, b) in enumerate(
                        zip(_strip(classes), _strip(self.class_names)))
                     if a != b),
                    'length') + '). Build the table for this dataset.')
        _, unseen_names = resolve_split(self.class_names, unseen=unseen)
        mask = torch.tensor([c in unseen_names for c in self.class_names])
        self.unseen_mask.copy_(mask)

    def add_classes(self, names: Sequence[str], vectors) -> None:
        """Append classes to the model, as unseen classes: their rows to M
        (``vectors``: ``[n, D]``, the table's width), one output each to C
        (the old outputs keep their weights; the new ones start as mmseg
        initialises ``conv_seg``). C must then be refit (``tools/
        add_classes.py``)."""
        if self.class_names is None:
            raise ValueError('SIGNHead.add_classes needs the class names of '
                             'the table: load a checkpoint trained with a '
                             'table file, or build the head with one.')
        names = [str(n) for n in names]
        vectors = torch.as_tensor(vectors, dtype=self.class_embedding.dtype)
        have = {n.strip(): n for n in self.class_names}
        clash = [n for n in names if n.strip() in have]
        if clash:
            raise ValueError(f'classes {clash} are already in the model '
                             f'({", ".join(self.class_names)}).')
        twice = sorted({n for n in names
                        if [m.strip() for m in names].count(n.strip()) > 1})
        if twice or not names:
            raise ValueError(f'the new class names must be distinct and not '
                             f'empty, got {names}.')
        width = self.class_embedding.shape[1]
        if vectors.shape != (len(names), width):
            raise ValueError(
                f'the embeddings of {names} have shape '
                f'{tuple(vectors.shape)}; the model\'s table is '
                f'[{self.num_classes}, {width}]: build them from the same '
                'sources (and options) as its table.')
        device = self.class_embedding.device
        self.class_embedding = torch.cat(
            [self.class_embedding, vectors.to(device)])
        self.unseen_mask = torch.cat([
            self.unseen_mask,
            self.unseen_mask.new_ones(len(names))])
        self.class_names = (*self.class_names, *names)
        old = self.conv_seg
        new = nn.Conv2d(old.in_channels, old.out_channels + len(names), 1)
        nn.init.normal_(new.weight, 0, 0.01)  # mmseg's conv_seg init
        nn.init.zeros_(new.bias)
        with torch.no_grad():
            new.weight[:old.out_channels] = old.weight
            new.bias[:old.out_channels] = old.bias
        self.conv_seg = new.to(old.weight.device)
        self.num_classes = self.out_channels = new.out_channels

    @property
    def seen_ids(self) -> Tensor:
        return (~self.unseen_mask).nonzero().flatten()

    @property
    def unseen_ids(self) -> Tensor:
        return self.unseen_mask.nonzero().flatten()

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

    def predict(self, inputs, batch_img_metas: List[dict],
                test_cfg) -> Tensor:
        logits = self.forward(inputs)
        if self.calibration:
            logits = logits - self.calibration * (~self.unseen_mask).to(
                logits.dtype)[None, :, None, None]
        return self.predict_by_feat(logits, batch_img_metas)

    @staticmethod
    def _pointwise(conv: nn.Conv2d, x: Tensor) -> Tensor:
        """A 1×1 conv applied to pixel features ``[N, C_in]`` as a matrix
        product (a conv over N 1×1 "images" makes cuDNN pick algorithms
        with a huge workspace)."""
        return F.linear(x, conv.weight.flatten(1), conv.bias)

    def _trunk_pixels(self, feats: Tensor) -> Tensor:
        """Trunk and dropout on pixel features ``[N, channels]``."""
        if self.classifier == 'shared_trunk':
            feats = torch.relu(self._pointwise(self.trunk[0], feats))
        return feats if self.dropout is None else self.dropout(feats)

    def classify(self, feats: Tensor) -> Tensor:
        """C on pixel features ``[N, channels]`` → logits ``[N, K]``
        (the same function as :meth:`cls_seg` on a feature map)."""
        return self._pointwise(self.conv_seg, self._trunk_pixels(feats))

    def generate(self, labels: Tensor, z: Tensor) -> Tensor:
        """``G(M(y) ⊕ z)`` for labels ``[N]`` and latents ``[N, L]`` →
        features ``[N, channels]``."""
        return self.generator(torch.cat([self.class_embedding[labels], z], 1))

    def discriminate(self, feats: Tensor) -> Tensor:
        """D's real/fake logits ``[N]`` for features ``[N, channels]``."""
        if self.classifier == 'linear':
            return self.discriminator(feats).squeeze(1)
        return self._pointwise(self.discriminator,
                               self._trunk_pixels(feats)).squeeze(1)

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

    def _cross_entropy(self, logits: Tensor, labels: Tensor) -> Tensor:
        """Mean cross-entropy over the non-ignored pixels (0 if none);
        ``logits [N, K, ...]``, ``labels [N, ...]``."""
        ce = F.cross_entropy(logits, labels, ignore_index=self.ignore_index,
                             reduction='none')
        return masked_mean(ce, labels != self.ignore_index)

    # --------------------------------------------------------------- losses
    def loss_segmentation(self, inputs, data_samples: SampleList,
                          extra_logits: Sequence[Tensor] = (),
                          weights: Optional[Tensor] = None
                          ) -> Dict[str, Tensor]:
        """Training step (SIM), eq. 4: ``loss_ce`` (+ ``acc_seg``) of C on
        real features and ``loss_kld`` (α·KL over labelled pixels).

        ``extra_logits``: C's logits at other input scales (DeepLab-v2
        multi-scale training); ``loss_ce`` is then the mean over the
        scale-1 logits, each extra scale and their element-wise max.
        ``weights`` (``[B, H, W]`` at the label resolution, self-training):
        each CE term is ``Σ w·ce / Σ w`` instead of the loss's mean.
        """
        feats, mu, logvar = inputs[:3]
        logits = self.forward(inputs)
        name = self.loss_decode.loss_name
        if weights is None:
            losses = self.loss_by_feat(logits, data_samples)
        else:  # loss_by_feat's terms, each CE Σ w·ce / Σ w
            labels = self._stack_batch_gt(data_samples)[:, 0]
            up = resize(logits, labels.shape[-2:], mode='bilinear',
                        align_corners=self.align_corners)
            losses = {
                name: self._weighted_cross_entropy(up, labels, weights),
                'acc_seg': accuracy(up, labels,
                                    ignore_index=self.ignore_index)}
        if extra_logits:
            fused = torch.stack([logits] + [
                resize(x, logits.shape[2:], mode='bilinear',
                       align_corners=self.align_corners)
                for x in extra_logits
            ]).max(dim=0).values
            losses[name] = torch.stack([losses[name]] + [
                self.loss_by_feat(x, data_samples)[name] if weights is None
                else self._weighted_cross_entropy(x, labels, weights)
                for x in (*extra_logits, fused)]).mean()
        if weights is not None:  # as loss_decode weighs its own CE
            losses[name] = self.loss_decode.loss_weight * losses[name]
        labels = self._labels_at(data_samples, feats.shape[2:])
        losses['loss_kld'] = self.loss_kld_weight * kl_divergence(
            mu, logvar, labels != self.ignore_index)
        return losses

    def loss_generator(self, inputs, data_samples: SampleList
                       ) -> Tuple[Dict[str, Tensor], Tensor, Tensor, Tensor]:
        """Training step (G), eq. 5-7 for G: β·MMD per seen class between
        real (detached) features and ``G(M(y), z)`` at the same pixels,
        where ``z`` is the SIM's own (detached) latent code of that pixel,
        and the adversarial loss.

        Returns ``(losses, real [N, C], fake [N, C], labels [N])`` so that
        D and C can be trained on the same pixels.
        """
        feats, _, _, z = (t.detach() for t in inputs[:4])
        labels = self._labels_at(data_samples, feats.shape[2:]).flatten()
        idx = self._sample_per_class(labels)
        labels = labels[idx]
        real = self._pixels(feats)[idx]
        fake = self.generate(labels, self._pixels(z)[idx])
        sigmas = [v**0.5 for v in self.mmd_kernel_variances]
        loss_mmd = fake.new_zeros(()) + 0 * fake.sum()
        classes = labels.unique()
        for c in classes:
            sel = labels == c
            mmd2 = gaussian_mmd(real[sel], fake[sel], sigmas)
            if self.mmd_estimator == 'released':
                # sqrt(½·MMD²), mean over classes; clamped: d sqrt at 0
                mmd2 = (0.5 * mmd2).clamp(min=1e-12).sqrt() / len(classes)
            loss_mmd = loss_mmd + mmd2
        losses = dict(
            loss_mmd=self.loss_mmd_weight * loss_mmd,
            loss_adv_g=self.loss_adv_weight *
            adversarial_loss(self.discriminate(fake), real=True))
        return losses, real, fake, labels

    def loss_discriminator(self, real: Tensor,
                           fake: Tensor) -> Dict[str, Tensor]:
        """D's side of eq. 6: real features → 1, generated → 0 (the two
        terms averaged, or summed with ``adv_d_reduction='sum'``)."""
        loss = (adversarial_loss(self.discriminate(real), real=True) +
                adversarial_loss(self.discriminate(fake.detach()), real=False))
        if self.adv_d_reduction == 'mean':
            loss = 0.5 * loss
        return dict(loss_adv_d=self.loss_adv_weight * loss)

    def loss_classifier_real(self, feats: Tensor, data_samples: SampleList,
                             weight: float,
                             weights: Optional[Tensor] = None) -> Tensor:
        """``weight`` × cross-entropy of C on (detached) real feature maps
        ``[B, C, h, w]`` against the labels at full resolution (weighted
        per pixel by ``weights [B, H, W]`` if given)."""
        labels = self._stack_batch_gt(data_samples)[:, 0]
        logits = self.cls_seg(feats.detach())
        if weights is not None:
            return weight * self._weighted_cross_entropy(logits, labels,
                                                         weights)
        logits = resize(logits, labels.shape[-2:], mode='bilinear',
                        align_corners=self.align_corners)
        return weight * self._cross_entropy(logits, labels)

    def _weighted_cross_entropy(self, logits: Tensor, labels: Tensor,
                                weights: Tensor) -> Tensor:
        """``Σ w·ce / Σ w`` of ``logits [B, K, h, w]`` (resized to the
        labels) against ``labels [B, H, W]`` with per-pixel ``weights
        [B, H, W]`` (0 on ignored pixels); 0 if no weight is positive.
        With weight 1 on every labelled pixel it is the plain mean."""
        if logits.shape[-2:] != labels.shape[-2:]:
            logits = resize(logits, labels.shape[-2:], mode='bilinear',
                            align_corners=self.align_corners)
        ce = F.cross_entropy(logits, labels, ignore_index=self.ignore_index,
                             reduction='none')
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

    def sample_pseudo_labels(self, num: int, device) -> Tensor:
        """``num`` class indices drawn i.i.d. with prior ∝ 1 per seen class
        and ``1 + gen_unseen_rate`` per unseen class."""
        unseen = self.unseen_mask.to(device)
        if not unseen.any():
            raise RuntimeError(
                'SIGNHead has no unseen classes: set `unseen_classes` or let '
                'SIGNStageHook copy them from the dataset metainfo.')
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

    def pseudo_labels(self, teacher_logits: Tensor,
                      data_samples: SampleList, mode: str,
                      temperature: float, top_p: float, top_k: int = 1,
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
            target, weight, conf = pseudo_label_image(
                prob, label, unseen, valid, mode, temperature, top_p,
                self.ignore_index, top_k, candidates)
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

    def loss_self_train(self, inputs, targets: Tensor, weights: Tensor,
                        synth_weight: float = 1.0) -> Dict[str, Tensor]:
        """Weighted cross-entropy of C on real features against seen labels
        and pseudo labels (``Σ w·ce / Σ w``), plus ``synth_weight`` ×
        ``loss_ce_synth`` (0 leaves it out)."""
        feats = inputs[0]
        losses = dict(loss_ce_st=self._weighted_cross_entropy(
            self.cls_seg(feats), targets, weights))
        if synth_weight:
            num = feats.shape[0] * feats.shape[2] * feats.shape[3]
            losses['loss_ce_synth'] = self.loss_synthetic(num, feats,
                                                          synth_weight)
        return losses

    def loss(self, inputs, batch_data_samples: SampleList,
             train_cfg) -> Dict[str, Tensor]:
        """Single-optimizer entry point (``EncoderDecoder.loss``): the
        segmentation losses only. SIGN trains through
        ``ZeroShotEncoderDecoder.train_step``."""
        return self.loss_segmentation(inputs, batch_data_samples)
