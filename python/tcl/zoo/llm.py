"""Language-model layers of the current generation, in plain PyTorch, at small size: the operator
families that BERT and GPT-2 (:mod:`tcl.zoo.transformers`) lack.

- Llama: RMSNorm, rotary position embeddings, grouped-query attention (keys and values repeated
  across head groups), a SwiGLU feed-forward layer.
- Falcon: multi-query attention (one key/value head, broadcast in the matmul), attention and
  feed-forward in parallel from one LayerNorm.
- T5 v1.1 encoder: RMSNorm, unscaled attention with a learned relative-position bias, a gated-GELU
  feed-forward layer.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


class Rotary(nn.Module):
    """Rotary position embedding of the first ``seq`` positions (cos/sin tables as buffers)."""

    def __init__(self, head_dim: int, seq: int, base: float = 10000.0) -> None:
        super().__init__()
        freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), freq)
        angles = torch.cat([angles, angles], -1)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-2]
        first, second = x.chunk(2, -1)
        rotated = torch.cat([-second, first], -1)
        return x * self.cos[:n] + rotated * self.sin[:n]  # type: ignore[index]


def causal_softmax(scores: torch.Tensor) -> torch.Tensor:
    n = scores.shape[-1]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1)


class GroupedQueryAttention(nn.Module):
    """Causal attention with ``kv_heads`` key/value heads shared by groups of query heads,
    repeated to every head before the matmuls (as Llama implementations do)."""

    def __init__(self, dim: int, heads: int, kv_heads: int, seq: int) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rotary = Rotary(self.head_dim, seq)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h, g, hd = self.heads, self.kv_heads, self.head_dim
        q = self.rotary(self.q(x).reshape(b, n, h, hd).transpose(1, 2))
        k, v = self.kv(x).reshape(b, n, 2, g, hd).permute(2, 0, 3, 1, 4)
        k = self.rotary(k)
        k, v = (t[:, :, None].expand(b, g, h // g, n, hd).reshape(b, h, n, hd) for t in (k, v))
        attn = causal_softmax(q @ k.transpose(-2, -1) / math.sqrt(hd))
        return self.out((attn @ v).transpose(1, 2).reshape(b, n, d))


class SwiGLU(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(functional.silu(self.gate(x)) * self.up(x))


class LlamaLayer(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int, seq: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.attn = GroupedQueryAttention(dim, heads, kv_heads, seq)
        self.ffn = SwiGLU(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


class Decoder(nn.Module):
    """Token embedding, ``layers``, a final norm and the LM head."""

    def __init__(self, vocab: int, dim: int, layers: list[nn.Module], norm: nn.Module) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.layers = nn.Sequential(*layers)
        self.norm = norm
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.layers(self.tokens(ids))))


def llama_block(
    dim: int = 512, heads: int = 8, kv_heads: int = 2, layers: int = 2, seq: int = 128
) -> nn.Module:
    """Two Llama layers at width 512 (8 query heads, 2 key/value heads, SwiGLU 1,408)."""
    blocks: list[nn.Module] = [LlamaLayer(dim, heads, kv_heads, 1408, seq) for _ in range(layers)]
    return Decoder(32000, dim, blocks, RMSNorm(dim))


class MultiQueryAttention(nn.Module):
    """Causal attention with one key/value head broadcast across the query heads by the matmul."""

    def __init__(self, dim: int, heads: int, seq: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.qkv = nn.Linear(dim, dim + 2 * self.head_dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rotary = Rotary(self.head_dim, seq)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).split([d, self.head_dim, self.head_dim], -1)
        q = self.rotary(q.reshape(b, n, self.heads, self.head_dim).transpose(1, 2))
        k, v = self.rotary(k[:, None]), v[:, None]
        attn = causal_softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim))
        return self.out((attn @ v).transpose(1, 2).reshape(b, n, d))


class FalconLayer(nn.Module):
    def __init__(self, dim: int, heads: int, seq: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = MultiQueryAttention(dim, heads, seq)
        self.mlp = nn.Sequential(
            nn.Linear(dim, 4 * dim, bias=False), nn.GELU(), nn.Linear(4 * dim, dim, bias=False)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(x)
        return x + self.attn(y) + self.mlp(y)


def falcon_block(dim: int = 512, heads: int = 8, layers: int = 2, seq: int = 128) -> nn.Module:
    """Two Falcon-style parallel layers at width 512 with multi-query attention."""
    blocks: list[nn.Module] = [FalconLayer(dim, heads, seq) for _ in range(layers)]
    return Decoder(16384, dim, blocks, nn.LayerNorm(dim))


class T5Layer(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = (
            self.qkv(self.norm1(x))
            .reshape(b, n, 3, self.heads, d // self.heads)
            .permute(2, 0, 3, 1, 4)
        )
        attn = (q @ k.transpose(-2, -1) + bias).softmax(-1)  # T5 does not scale by sqrt(d)
        x = x + self.out((attn @ v).transpose(1, 2).reshape(b, n, d))
        y = self.norm2(x)
        return x + self.down(functional.gelu(self.gate(y), approximate="tanh") * self.up(y))


class T5Encoder(nn.Module):
    def __init__(
        self, dim: int = 512, heads: int = 8, hidden: int = 1024, layers: int = 2, seq: int = 128
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(32128, dim)
        # The bucketed relative-position bias of the first layer, shared by all (as in T5),
        # kept as its materialized table.
        self.position_bias = nn.Parameter(torch.randn(1, heads, seq, seq) * 0.1)
        self.layers = nn.ModuleList(T5Layer(dim, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        x, bias = self.tokens(ids), self.position_bias[:, :, :n, :n]
        for layer in self.layers:
            x = layer(x, bias)
        return self.norm(x)


def t5_encoder() -> nn.Module:
    """Two T5 v1.1 (small) encoder layers: width 512, 8 heads, gated-GELU 1,024."""
    return T5Encoder()
