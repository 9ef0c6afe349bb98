"""The four encoding modules of the SIM (paper section 4.4, appendix).

Each maps ``concat(x, PE)`` ``[B, C + P, H, W]`` to ``[B, C, H, W]``; the
SIM adds the result to ``x`` (residual).
"""
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvEncoder(nn.Module):
    """(A) residual conv block: 3×3 conv, ReLU, 3×3 conv."""

    def __init__(self, in_channels: int, channels: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1),
            nn.ReLU(inplace=True), nn.Conv2d(channels, channels, 3, padding=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class AttentionEncoder(nn.Module):
    """(B) CaGNet-style contextual attention: three context features of
    growing dilation, each gated by its own pixel-wise attention map, then
    concatenated and fused by a 1×1 conv."""

    def __init__(self, in_channels: int, channels: int, dilations=(1, 2, 4)):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, channels, 3, padding=1),
            nn.LeakyReLU(0.2, inplace=True))
        self.contexts = nn.ModuleList([
            nn.Sequential(
                nn.Conv2d(channels, channels, 3, padding=d, dilation=d),
                nn.LeakyReLU(0.2, inplace=True)) for d in dilations
        ])
        self.attentions = nn.ModuleList(
            [nn.Conv2d(channels, 1, 1) for _ in dilations])
        self.fuse = nn.Conv2d(channels * len(dilations), channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        gated = []
        for context, attention in zip(self.contexts, self.attentions):
            h = context(h)
            gated.append(h * torch.sigmoid(attention(h)))
        return self.fuse(torch.cat(gated, dim=1))


class SelfAttentionEncoder(nn.Module):
    """(C, D) Transformer-encoder block over the H·W positions: multi-head
    self-attention (``num_heads=1`` for plain self-attention) and a
    position-wise feed-forward network, each residual.

    Attention runs through ``F.scaled_dot_product_attention`` so the
    (HW)×(HW) matrix is never built by this code (fused / memory-efficient
    kernels on GPU, blocked flash attention on CPU).
    """

    def __init__(self,
                 in_channels: int,
                 channels: int,
                 num_heads: int = 8,
                 ffn_ratio: float = 2.0,
                 dropout: float = 0.0,
                 pad_heads: Optional[bool] = None,
                 key_pool: int = 1):
        super().__init__()
        if not isinstance(key_pool, int) or key_pool < 1:
            raise ValueError('SIM encoder_cfg.key_pool must be an integer '
                             f'>= 1 (1: global attention), got {key_pool!r}.')
        # > 1: keys and values from the map average-pooled by key_pool
        # (ceil), so attention costs HW·HW/key_pool² (docs/benchmark.md)
        self.key_pool = key_pool
        # None: pad the head size to a multiple of 8 off the CPU (below)
        self.pad_heads = pad_heads
        if channels % num_heads:
            raise ValueError(f'SIM channels ({channels}) must be divisible '
                             f'by num_heads ({num_heads}).')
        self.num_heads = num_heads
        self.dropout = dropout
        self.in_proj = nn.Conv2d(in_channels, channels, 1)
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.out_proj = nn.Conv2d(channels, channels, 1)
        hidden = int(channels * ffn_ratio)
        self.ffn = nn.Sequential(
            nn.Conv2d(channels, hidden, 1), nn.ReLU(inplace=True),
            nn.Conv2d(hidden, channels, 1))
        self.norm1 = nn.GroupNorm(1, channels)
        self.norm2 = nn.GroupNorm(1, channels)

    def attention_inputs(self, h: torch.Tensor):
        """``q, k, v`` ``[B, heads, HW, C/heads]`` from ``h [B, C, H, W]``
        (``k, v``: ``[B, heads, ⌈H/p⌉·⌈W/p⌉, C/heads]`` with ``key_pool``
        p > 1).

        Each is made contiguous: with a strided last dimension PyTorch falls
        back to the math kernel, which builds the (HW)×(HW) matrix (34 GiB
        for a 1024×2048 image at output stride 8); contiguous inputs take
        the flash / memory-efficient kernels (measured on CPU: 16 384
        tokens, 8 heads: 47.6 s and 18.8 GB → 3.0 s and 0.16 GB).
        """
        b, c, height, width = h.shape
        heads = (self.num_heads, c // self.num_heads)
        if self.key_pool == 1:
            qkv = self.qkv(h).reshape(b, 3, *heads, height * width)
            return [t.transpose(-1, -2).contiguous() for t in qkv.unbind(1)]
        if height * width > 1 and self.key_pool >= max(height, width):
            raise ValueError(
                f'SIM encoder_cfg.key_pool={self.key_pool} pools the '
                f'{height}x{width} feature map to a single key: attention '
                'over one key gives every position the same context. Use '
                f'key_pool < {max(height, width)} (it is meant for large '
                'maps, docs/benchmark.md), or 1 for global attention.')
        # the 1×1 projection commutes with average pooling: k, v of the
        # pooled map are the pooled k, v of the full map
        w_q, w_kv = self.qkv.weight.split([c, 2 * c])
        b_q, b_kv = self.qkv.bias.split([c, 2 * c])
        q = F.conv2d(h, w_q, b_q).reshape(b, *heads, height * width)
        pooled = F.avg_pool2d(h, self.key_pool, ceil_mode=True)
        kv = F.conv2d(pooled, w_kv, b_kv).reshape(b, 2, *heads, -1)
        return [t.transpose(-1, -2).contiguous() for t in (q, *kv.unbind(1))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.in_proj(x)
        b, c, height, width = h.shape
        q, k, v = self.attention_inputs(self.norm1(h))
        # CUDA's fused kernels need a head size divisible by 8 (600 / 8 =
        # 75 is not): zero-padding q, k, v leaves q·kᵀ and the first
        # columns of the output unchanged, and keeps SDPA off the math
        # kernel, which builds the (HW)×(HW) matrix. The CPU flash kernel
        # takes any head size (padding would only add work there).
        head_dim, pad = q.shape[-1], -q.shape[-1] % 8
        if pad and (self.pad_heads
                    if self.pad_heads is not None else q.device.type != 'cpu'):
            q, k, v = (F.pad(t, (0, pad)) for t in (q, k, v))
        attn = F.scaled_dot_product_attention(
            q,
            k,
            v,
            dropout_p=self.dropout if self.training else 0.0,
            scale=head_dim**-0.5)[..., :head_dim]
        attn = attn.transpose(-1, -2).reshape(b, c, height, width)
        h = h + self.out_proj(attn)
        return h + self.ffn(self.norm2(h))


SIM_ENCODERS = dict(
    conv=ConvEncoder,
    attention=AttentionEncoder,
    self_attention=SelfAttentionEncoder,  # one head
    multihead_self_attention=SelfAttentionEncoder)

#: what ``encoder_cfg`` may set for each ``arch`` (the heads of the
#: multi-head variant are the SIM's own ``num_heads``)
SIM_ENCODER_OPTIONS = dict(
    conv=(),
    attention=('dilations', ),
    self_attention=('ffn_ratio', 'dropout', 'pad_heads', 'key_pool'),
    multihead_self_attention=('ffn_ratio', 'dropout', 'pad_heads', 'key_pool'))


def build_sim_encoder(arch: str,
                      in_channels: int,
                      channels: int,
                      num_heads: int,
                      encoder_cfg: Optional[dict] = None) -> nn.Module:
    """The SIM's encoding module; a setting it would not use is an error.

    Args:
        arch (str): a key of :data:`SIM_ENCODERS`.
        in_channels (int): ``C + P`` (features and PE).
        channels (int): ``C``.
        num_heads (int): heads of ``'multihead_self_attention'`` (the other
            variants have one or none).
        encoder_cfg (dict, optional): the variant's options
            (:data:`SIM_ENCODER_OPTIONS`).

    Returns:
        nn.Module: ``[B, C + P, H, W] -> [B, C, H, W]``.
    """
    cfg = dict(encoder_cfg or {})
    known = SIM_ENCODER_OPTIONS[arch]
    unknown = sorted(set(cfg) - set(known))
    if 'key_pool' in unknown:
        raise ValueError(
            f"SIM encoder_cfg.key_pool: arch={arch!r} has no attention whose "
            "keys it could pool (key_pool is an option of 'self_attention' "
            "and 'multihead_self_attention'); remove it.")
    if unknown:
        hint = (" (the heads are the SIM's own num_heads)"
                if 'num_heads' in unknown and 'attention' in arch
                and arch != 'attention' else '')
        raise ValueError(
            f'SIM encoder_cfg: unknown keys {unknown} for arch={arch!r}'
            f'{hint}; its options: {list(known) or "none"}.')
    if arch == 'self_attention':
        cfg['num_heads'] = 1
    elif arch == 'multihead_self_attention':
        cfg['num_heads'] = num_heads
    return SIM_ENCODERS[arch](in_channels, channels, **cfg)
