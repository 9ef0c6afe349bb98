"""Reparameterisation module of the SIM (the paper's appendix figure; the
authors' code calls it the contextual module)."""
from typing import Optional, Sequence, Tuple

import torch
import torch.nn as nn
from torch import Tensor


class ContextualReparameterization(nn.Module):
    """``mu, logvar = R(sigmoid(h'))``, each ``[B, L, H, W]``.

    Three 3×3 conv + ReLU layers in series (``channels`` → ``hidden``, one
    dilation each) give three context maps of growing receptive field; a
    3×3 conv over their concatenation gives one sigmoid gate per map; the
    gated maps, concatenated, go through a 1×1 conv + ReLU back to
    ``channels``; two 3×3 convs give ``mu`` and ``logvar``.

    Args:
        channels (int): channels of ``h'``.
        latent_channels (int): channels of ``z`` (must equal ``channels``
            for ``F_x = sigmoid(h' + h'·sigmoid(z))``).
        hidden (int): channels of the context maps (256 in the paper).
        dilations (Sequence[int]): dilation of each context conv.
        logvar_relu (bool): pass ``logvar`` through a ReLU (so
            ``σ ≥ 1``), as the authors' code does.
        released_gates (bool): the authors' gates ``sigmoid(ReLU(conv))``
            (so ≥ 0.5) with a bias-free conv (the released code,
            docs/reproduction.md); False:
            ``sigmoid(conv)`` with a bias.
    """

    def __init__(self,
                 channels: int,
                 latent_channels: int,
                 hidden: int = 256,
                 dilations: Sequence[int] = (1, 2, 5),
                 logvar_relu: bool = True,
                 released_gates: bool = False):
        super().__init__()
        self.contexts = nn.ModuleList()
        in_ch = channels
        for d in dilations:
            self.contexts.append(
                nn.Sequential(
                    nn.Conv2d(in_ch, hidden, 3, padding=d, dilation=d),
                    nn.ReLU(inplace=True)))
            in_ch = hidden
        n = len(dilations)
        self.gates = nn.Conv2d(
            n * hidden, n, 3, padding=1, bias=not released_gates)
        self.released_gates = released_gates
        self.fuse = nn.Sequential(
            nn.Conv2d(n * hidden, channels, 1), nn.ReLU(inplace=True))
        self.mu = nn.Conv2d(channels, latent_channels, 3, padding=1)
        self.logvar = nn.Conv2d(channels, latent_channels, 3, padding=1)
        self.logvar_relu = logvar_relu
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Start near N(0, I), so that the KL term (α = 100) starts small
        (its own layers; the others keep torch's defaults)."""
        for conv in (self.mu, self.logvar):
            nn.init.normal_(conv.weight, std=0.01)
            nn.init.zeros_(conv.bias)

    def forward(self,
                x: Tensor,
                with_logvar: bool = True) -> Tuple[Tensor, Optional[Tensor]]:
        """``(mu, logvar)``; ``logvar`` is None with ``with_logvar=False``
        (inference: ``z = mu`` needs no variance, and its 3×3 conv is a
        third of this module's cost)."""
        maps = []
        for context in self.contexts:
            x = context(x)
            maps.append(x)
        cat = torch.cat(maps, dim=1)
        gates = self.gates(cat)
        if self.released_gates:
            gates = torch.relu(gates)
        gates = torch.sigmoid(gates)  # [B, n, H, W]
        gated = torch.cat([m * gates[:, i:i + 1] for i, m in enumerate(maps)],
                          dim=1)
        h = self.fuse(gated)
        if not with_logvar:
            return self.mu(h), None
        logvar = self.logvar(h)
        if self.logvar_relu:
            logvar = torch.relu(logvar)
        return self.mu(h), logvar
