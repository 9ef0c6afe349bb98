"""Spatial Information Module (SIM), paper section 3.2-3.3, eq. 1-3."""
from typing import Optional, Sequence, Tuple

import torch
from mmengine.model import BaseModule
from mmseg.models.utils import resize
from mmseg.registry import MODELS

from ..utils import PE_TYPES, positional_encoding_2d
from .input_projections import (build_input_proj, check_levels, select_levels,
                                takes_levels)
from .reparameterization import ContextualReparameterization
from .sim_encoders import SIM_ENCODERS, build_sim_encoder


@MODELS.register_module('SIM')
@MODELS.register_module()
class SpatialInformationModule(BaseModule):
    """``F_x, mu, logvar, z = SIM(E(x) ⊕ PE)`` (eq. 1-3).

    With ``h = E(x)`` (backbone + input projection)::

        h'        = h + Enc(sigmoid(h) ⊕ PE)          (residual encoder)
        mu, logvar = R(sigmoid(h'))                  (reparameterisation)
        z         = mu + ε·exp(logvar / 2)  (train),  z = mu  (eval)
        F_x       = sigmoid(h' + h'·sigmoid(z))

    ``z`` modulates ``F_x``, so the segmentation loss gives it meaning and
    the KL term (eq. 2) only keeps it near N(0, I): the spatial prior that
    G is conditioned on. This is the authors' released feature path.

    Args:
        in_channels (int | list[int]): channels of the selected backbone
            level (a list, one per level, with ``'resize_concat'``).
        channels (int): feature channels ``C`` of ``F_x`` (600 in the paper).
        in_index (int | list[int]): which backbone output(s) to use.
        input_proj (str | dict | None): ``'aspp'``: the DeepLab-v2 ASPP
            (sum of 3×3 convs with ``dilations``) from ``in_channels`` to
            ``channels``, so that backbone + projection is the paper's
            encoder E; a projection's config that reads several levels
            (``dict(type='MLPFusion')``: ``in_index`` and ``in_channels``
            lists, no ``input_transform``); ``None`` when the backbone
            already gives ``channels``.
        pe_type (str): ``'relative'`` (RPE, eq. 14-15), ``'absolute'``,
            ``'absolute_interp'`` or ``'none'``.
        pe_channels (int): positional-encoding channels (half horizontal,
            half vertical).
        pe_scale (float): ``c`` of eq. 14-15.
        train_size (tuple[int, int], optional): feature-map size for
            ``'absolute_interp'``.
        arch (str): ``'conv'``, ``'attention'``, ``'self_attention'`` or
            ``'multihead_self_attention'``.
        num_heads (int): heads of ``'multihead_self_attention'``.
        latent_channels (int): channels of ``mu`` / ``logvar`` / ``z``;
            must equal ``channels`` (``z`` gates ``h'`` channel-wise).
        latent_hidden (int): channels of the reparameterisation module's
            context maps (256 in the paper).
        latent_dilations (Sequence[int]): their dilations (1, 2, 5).
        logvar_relu (bool): ReLU on ``logvar`` as in the authors' code.
        released_gates (bool): the authors' context gates
            ``sigmoid(ReLU(conv))`` with a bias-free conv.
        input_transform (str, optional): ``'resize_concat'`` fuses several
            levels (HRNet / MiT): resized to the first one's size and
            concatenated before the input projection.
        encoder_cfg (dict, optional): extra arguments of the encoding
            module (e.g. ``ffn_ratio``, ``dropout``; per ``arch``:
            ``SIM_ENCODER_OPTIONS``, an unknown key is an error).
        z_modulation (bool): ``F_x = sigmoid(h' + h'·sigmoid(z))`` (default,
            the paper). ``False`` gives ``F_x = sigmoid(h')``, where mu and
            logvar learn from the KL term alone and ``z`` collapses to
            noise; kept only as an ablation switch.

    Returns from ``forward``: ``(F_x, mu, logvar, z)``, each
    ``[B, C, H, W]``.
    """

    def __init__(self,
                 in_channels: int,
                 channels: int = 600,
                 in_index: int = -1,
                 input_proj: Optional[str] = 'aspp',
                 dilations: Sequence[int] = (6, 12, 18, 24),
                 pe_type: str = 'relative',
                 pe_channels: int = 600,
                 pe_scale: float = 512.0,
                 train_size: Optional[Sequence[int]] = None,
                 arch: str = 'multihead_self_attention',
                 num_heads: int = 8,
                 latent_channels: int = 600,
                 latent_hidden: int = 256,
                 latent_dilations: Sequence[int] = (1, 2, 5),
                 logvar_relu: bool = True,
                 released_gates: bool = False,
                 z_modulation: bool = True,
                 input_transform: Optional[str] = None,
                 encoder_cfg: Optional[dict] = None,
                 init_cfg=None):
        super().__init__(init_cfg=init_cfg)
        if input_transform not in (None, 'resize_concat'):
            raise ValueError("SIM input_transform must be None or "
                             f"'resize_concat', got {input_transform!r}.")
        self.takes_levels = takes_levels(input_proj)
        if self.takes_levels:
            check_levels('SIM', in_index, in_channels, input_transform)
        elif (input_transform is None) != isinstance(in_index, int):
            raise ValueError(
                'SIM: give one backbone level (an int in_index) without '
                "input_transform, or several (a list) with input_transform="
                f"'resize_concat'; got in_index={in_index!r}, "
                f'input_transform={input_transform!r}.')
        if input_transform == 'resize_concat' and \
                not isinstance(in_channels, (list, tuple)):
            raise ValueError(
                "SIM input_transform='resize_concat' needs in_channels as a "
                'list, one per in_index level.')
        self.input_transform = input_transform
        self.level_channels = in_channels  # each level's, as given
        if isinstance(in_channels, (list, tuple)) and not self.takes_levels:
            in_channels = sum(in_channels)
        if arch not in SIM_ENCODERS:
            raise ValueError(f'SIM arch must be one of {list(SIM_ENCODERS)}'
                             f', got {arch!r}.')
        if pe_type not in PE_TYPES:
            raise ValueError(f'SIM pe_type must be one of {PE_TYPES}, got '
                             f'{pe_type!r}.')
        if pe_type == 'absolute_interp' and train_size is None:
            raise ValueError("SIM pe_type='absolute_interp' needs "
                             '`train_size` (H, W of the training feature '
                             'map, e.g. crop size / output stride).')
        self.in_index = in_index
        self.channels = channels
        self.pe_type = pe_type
        self.pe_channels = 0 if pe_type == 'none' else pe_channels
        self.pe_scale = pe_scale
        self.train_size = train_size
        if input_proj is None and in_channels != channels:
            raise ValueError(
                f'SIM input_proj=None needs in_channels == channels, got '
                f'{in_channels} != {channels}; use input_proj="aspp".')
        self.input_proj = build_input_proj(input_proj, in_channels, channels,
                                           dilations, 'SIM')
        self.encoder = build_sim_encoder(arch, channels + self.pe_channels,
                                         channels, num_heads, encoder_cfg)
        if latent_channels != channels:
            raise ValueError(
                f'SIM latent_channels ({latent_channels}) must equal '
                f'channels ({channels}): z gates the features channel-wise '
                "(F_x = sigmoid(h' + h'*sigmoid(z))).")
        self.reparam = ContextualReparameterization(channels, latent_channels,
                                                    latent_hidden,
                                                    latent_dilations,
                                                    logvar_relu,
                                                    released_gates)
        self.z_modulation = z_modulation

    def _select_inputs(self, inputs) -> torch.Tensor:
        """The backbone level(s) ``in_index`` names, as one map: several
        levels are resized (bilinear) to the first one's size and
        concatenated, like mmseg's heads' ``'resize_concat'``."""
        if not isinstance(inputs, (list, tuple)):
            return inputs
        levels = select_levels(inputs, self.in_index, self.level_channels,
                               'SIM')
        if self.takes_levels or self.input_transform is None:
            return levels  # the projection fuses several itself
        return torch.cat(
            [levels[0]] + [
                resize(
                    x,
                    size=levels[0].shape[2:],
                    mode='bilinear',
                    align_corners=False) for x in levels[1:]
            ],
            dim=1)

    def positional_encoding(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, pe_channels, H, W]`` for feature map ``x``."""
        b, _, h, w = x.shape
        pe = positional_encoding_2d(
            h,
            w,
            self.pe_channels,
            self.pe_type,
            self.pe_scale,
            self.train_size,
            device=x.device)
        return pe.to(x.dtype)[None].expand(b, -1, -1, -1)

    def forward(self,
                inputs,
                features_only: bool = False) -> Tuple[torch.Tensor, ...]:
        """``(F_x, mu, logvar, z)``; with ``features_only=True`` in eval
        mode ``(F_x, )`` alone (the inference path: backbone → SIM → C;
        ``logvar`` is not computed, ``z = mu``)."""
        x = self._select_inputs(inputs)
        h = x if self.input_proj is None else self.input_proj.project(x)
        enc_in = torch.sigmoid(h)
        if self.pe_channels:
            enc_in = torch.cat([enc_in, self.positional_encoding(h)], dim=1)
        h = h + self.encoder(enc_in)
        lean = features_only and not self.training
        mu, logvar = self.reparam(torch.sigmoid(h), with_logvar=not lean)
        z = mu
        if self.training:
            z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        if self.z_modulation:
            feats = torch.sigmoid(h + h * torch.sigmoid(z))
        else:
            feats = torch.sigmoid(h)
        if lean:
            return (feats, )
        return feats, mu, logvar, z
