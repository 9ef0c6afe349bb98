"""G: the per-pixel feature generator of SIGN (paper section 3.2)."""
from typing import Optional, Sequence, Union

import torch
import torch.nn as nn
from mmseg.registry import MODELS
from torch import Tensor


def mlp_layers(dims: Sequence[int],
               dropout: Union[float, Sequence[float]] = 0.0,
               out_act: Optional[str] = None) -> list:
    """Layers of a per-pixel MLP on ``[N, dims[0]]``: Linear + LeakyReLU(0.2)
    (+ dropout, one rate for all hidden layers or one per hidden layer)
    between layers, then ``out_act`` (``'sigmoid'`` or None) at the end.

    Args:
        dims (Sequence[int]): input, hidden and output widths.
        dropout (float | Sequence[float]): the hidden layers' dropout.
        out_act (str, optional): ``'sigmoid'`` or None.

    Returns:
        list[nn.Module]: the layers, for ``nn.Sequential``.
    """
    n_hidden = len(dims) - 2
    rates = [dropout] * n_hidden if isinstance(dropout, (int, float)) \
        else list(dropout)
    if len(rates) != n_hidden:
        raise ValueError(f'{len(rates)} dropout rates given for {n_hidden} '
                         f'hidden layers {tuple(dims[1:-1])}: give one rate, '
                         'or one per hidden layer.')
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
    return layers


@MODELS.register_module()
class PixelMLPGenerator(nn.Sequential):
    """G: ``[M(y) ⊕ z]`` per pixel → a feature of ``out_channels`` dims.

    ``SIGNHead`` builds it from its ``generator`` config and fills in
    ``embed_channels`` (the class-embedding table's width),
    ``latent_channels`` and ``out_channels`` (the SIM channels). Any
    generator registered in ``MODELS`` with these arguments and
    ``forward(embeddings [N, D], z [N, L]) -> [N, out_channels]`` can
    replace it (``decode_head.generator=dict(type=...)``). The layers are
    the module's items (``generator.0.weight``, ...).

    Args:
        embed_channels (int): width D of the class embeddings.
        latent_channels (int): width L of the latent code z.
        out_channels (int): width of the generated features.
        hidden_channels (Sequence[int]): hidden sizes (the paper's
            1024, 960, 864, 784, 720).
        dropout (float | Sequence[float]): dropout after each hidden layer
            (the authors: 0.1, 0.1, 0.3, 0.5, 0.5).
        out_act (str | None): ``'sigmoid'`` matches the range of the SIM's
            ``F_x``; None leaves the output linear.
    """

    def __init__(self,
                 embed_channels: int,
                 latent_channels: int,
                 out_channels: int,
                 hidden_channels: Sequence[int] = (1024, 960, 864, 784, 720),
                 dropout: Union[float,
                                Sequence[float]] = (0.1, 0.1, 0.3, 0.5, 0.5),
                 out_act: Optional[str] = 'sigmoid'):
        super().__init__(*mlp_layers(
            [embed_channels + latent_channels, *hidden_channels, out_channels],
            dropout, out_act))
        self.embed_channels = embed_channels
        self.latent_channels = latent_channels
        self.out_channels = out_channels

    def forward(self, embeddings: Tensor, z: Tensor) -> Tensor:
        """``[N, D]`` class embeddings and ``[N, L]`` latents → ``[N, out]``.
        """
        return super().forward(torch.cat([embeddings, z], 1))

    def set_embed_channels(self, embed_channels: int) -> None:
        """Rebuild the input layer for another embedding width (a
        checkpoint's table replacing a placeholder); no-op if equal."""
        first = self[0]
        width = embed_channels + self.latent_channels
        if first.in_features != width:
            self[0] = nn.Linear(width,
                                first.out_features).to(first.weight.device)
        self.embed_channels = embed_channels
