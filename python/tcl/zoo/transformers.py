"""Transformer-style networks of the zoo in plain PyTorch (BERT, ELECTRA, ViT, GPT-2,
MLP-Mixer, Conformer, Keyword Transformer)."""

from __future__ import annotations

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool = False) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        if self.causal:
            mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
            scores = scores.masked_fill(mask, float("-inf"))
        return self.out((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))


class EncoderLayer(nn.Module):
    """Post-norm (BERT) or pre-norm (ViT, GPT-2) transformer layer."""

    def __init__(
        self, dim: int, heads: int, ffn: int, pre_norm: bool, causal: bool = False
    ) -> None:
        super().__init__()
        self.attn = SelfAttention(dim, heads, causal)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.GELU(), nn.Linear(ffn, dim))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.pre_norm = pre_norm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.attn(self.norm1(x))
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.ffn(x))


class Bert(nn.Module):
    """BERT's encoder; with ``embed`` narrower than ``dim`` (ELECTRA), the embeddings are that
    wide and projected to the layers' width."""

    def __init__(
        self,
        layers: int,
        dim: int,
        heads: int,
        ffn: int,
        vocab: int = 30522,
        seq: int = 512,
        embed: int | None = None,
    ) -> None:
        super().__init__()
        embed = embed or dim
        self.tokens = nn.Embedding(vocab, embed)
        self.positions = nn.Parameter(torch.randn(1, seq, embed) * 0.02)
        self.norm = nn.LayerNorm(embed)
        # an identity where the widths agree: BERT's graph, and so its tasks, stay as they are
        self.project = nn.Linear(embed, dim) if embed != dim else nn.Identity()
        self.layers = nn.Sequential(
            *[EncoderLayer(dim, heads, ffn, pre_norm=False) for _ in range(layers)]
        )

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.tokens(ids) + self.positions[:, : ids.shape[1]])
        return self.layers(self.project(x))


def bert_tiny() -> nn.Module:
    return Bert(layers=2, dim=128, heads=2, ffn=512)


def bert_base() -> nn.Module:
    return Bert(layers=12, dim=768, heads=12, ffn=3072)


def electra_small() -> nn.Module:
    """ELECTRA-small's discriminator (Clark et al. 2020): 128-wide embeddings projected to
    256-wide layers of 4 heads; two of its twelve layers (the others repeat their tasks). Small
    dense layers (128 to 1,024 wide) that the other training networks lack."""
    return Bert(layers=2, dim=256, heads=4, ffn=1024, embed=128)


class ViT(nn.Module):
    def __init__(
        self,
        dim: int = 192,
        depth: int = 12,
        heads: int = 3,
        patch: int = 16,
        image: int = 224,
        classes: int = 1000,
    ) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.positions = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.layers = nn.Sequential(
            *[EncoderLayer(dim, heads, 4 * dim, pre_norm=True) for _ in range(depth)]
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.positions
        return self.head(self.norm(self.layers(x))[:, 0])


def vit_tiny() -> nn.Module:
    return ViT()


class GPT2Block(nn.Module):
    """One GPT-2 (small) decoder block with its embedding and LM head, as used for serving."""

    def __init__(
        self, dim: int = 768, heads: int = 12, vocab: int = 50257, seq: int = 1024
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.block = EncoderLayer(dim, heads, 4 * dim, pre_norm=True, causal=True)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions[:, : ids.shape[1]]
        return self.head(self.norm(self.block(x)))


def gpt2_block() -> nn.Module:
    return GPT2Block()


class MixerLayer(nn.Module):
    def __init__(self, tokens: int, dim: int, token_mlp: int, channel_mlp: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, token_mlp), nn.GELU(), nn.Linear(token_mlp, tokens)
        )
        self.channel_mlp = nn.Sequential(
            nn.Linear(dim, channel_mlp), nn.GELU(), nn.Linear(channel_mlp, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


def mlp_mixer(
    dim: int = 512, depth: int = 8, patch: int = 16, image: int = 224, classes: int = 1000
) -> nn.Module:
    tokens = (image // patch) ** 2
    return nn.Sequential(
        nn.Conv2d(3, dim, patch, patch),
        nn.Flatten(2),
        Transpose(),
        *[MixerLayer(tokens, dim, 256, 2048) for _ in range(depth)],
        nn.LayerNorm(dim),
        Mean(1),
        nn.Linear(dim, classes),
    )


class Transpose(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)


class Mean(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(self.dim)


class ConformerConv(nn.Module):
    """The Conformer's convolution module: pointwise, GLU, depthwise 1-D, batch norm, SiLU."""

    def __init__(self, dim: int, kernel: int = 31) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.pointwise1 = nn.Conv1d(dim, 2 * dim, 1)
        self.depthwise = nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim)
        self.batch_norm = nn.BatchNorm1d(dim)
        self.pointwise2 = nn.Conv1d(dim, dim, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        value, gate = self.pointwise1(self.norm(x).transpose(1, 2)).chunk(2, 1)
        y = nn.functional.silu(self.batch_norm(self.depthwise(value * gate.sigmoid())))
        return self.pointwise2(y).transpose(1, 2)


class ConformerLayer(nn.Module):
    """Macaron feed-forward halves around self-attention and the convolution module."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()

        def ffn() -> nn.Module:
            return nn.Sequential(
                nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim)
            )

        self.ffn1, self.ffn2 = ffn(), ffn()
        self.attn_norm = nn.LayerNorm(dim)
        self.attn = SelfAttention(dim, heads)
        self.conv = ConformerConv(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + 0.5 * self.ffn1(x)
        x = x + self.attn(self.attn_norm(x))
        x = x + self.conv(x)
        return self.norm(x + 0.5 * self.ffn2(x))


class Conformer(nn.Module):
    """A speech encoder on log-mel frames (batch, mels, frames): two strided 1-D convolutions
    subsample time by 4, then Conformer layers (the 'S' width, 144)."""

    def __init__(self, mels: int = 80, dim: int = 144, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        self.subsample = nn.Sequential(
            nn.Conv1d(mels, dim, 3, 2, 1), nn.SiLU(), nn.Conv1d(dim, dim, 3, 2, 1), nn.SiLU()
        )
        self.layers = nn.Sequential(*[ConformerLayer(dim, heads) for _ in range(layers)])

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.layers(self.subsample(mel).transpose(1, 2))


def conformer() -> nn.Module:
    return Conformer()


class KeywordTransformer(nn.Module):
    """Keyword Transformer KWT-1 (Berg et al. 2021) on MFCC frames (batch, coefficients,
    frames): each frame a token, a class token, post-norm layers 64 wide of one head; two of its
    twelve layers. Its 99-token sequence and 40- to 256-wide dense layers are shapes that no
    other training network has."""

    def __init__(
        self,
        mfcc: int = 40,
        frames: int = 98,
        dim: int = 64,
        heads: int = 1,
        ffn: int = 256,
        layers: int = 2,
        classes: int = 35,
    ) -> None:
        super().__init__()
        self.embed = nn.Linear(mfcc, dim)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.positions = nn.Parameter(torch.randn(1, frames + 1, dim) * 0.02)
        self.layers = nn.Sequential(
            *[EncoderLayer(dim, heads, ffn, pre_norm=False) for _ in range(layers)]
        )
        self.head = nn.Linear(dim, classes)

    def forward(self, mfcc: torch.Tensor) -> torch.Tensor:
        x = self.embed(mfcc.transpose(1, 2))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1)
        x = self.layers(x + self.positions[:, : x.shape[1]])
        return self.head(x[:, 0])


def kwt() -> nn.Module:
    return KeywordTransformer()
