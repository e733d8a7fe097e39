"""Five networks outside tcl's zoo, written as a user writes them, each a function returning
(module, example_inputs) for ``tcl tune user_networks.py:NAME``: a 2-layer LSTM tagger, a
2-layer pre-norm Transformer encoder (PyTorch's own layers), a WaveNet-style stack of dilated,
gated 1-D convolutions, a PointNet classifier (1x1 convolutions and a max over points) and a
shifted-window attention block (Swin's: a roll, window partition and reverse around
attention). bench/README.md's *One minute of `tcl tune` on five networks written as a user
writes them* tunes them:

    tcl tune examples/user_networks.py:swin_block --minutes 1 --work-dir W/swin_block
"""

from __future__ import annotations

import torch
from torch import nn

Example = tuple[nn.Module, tuple[torch.Tensor, ...]]


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(64, 128)
        self.lstm = nn.LSTM(128, 128, num_layers=2, batch_first=True)
        self.head = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(torch.relu(self.embed(x)))
        return self.head(y)


def lstm() -> Example:
    torch.manual_seed(0)
    return Tagger().eval(), (torch.randn(1, 32, 64),)


def encoder() -> Example:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(
        256, 4, 1024, activation="gelu", batch_first=True, norm_first=True
    )
    net = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return net.eval(), (torch.randn(1, 128, 256),)


class Gated(nn.Module):
    """A residual block of WaveNet: tanh(filter) x sigmoid(gate), both dilated convolutions."""

    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        conv = {"kernel_size": 3, "dilation": dilation, "padding": dilation}
        self.filter = nn.Conv1d(channels, channels, **conv)
        self.gate = nn.Conv1d(channels, channels, **conv)
        self.out = nn.Conv1d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.out(torch.tanh(self.filter(x)) * torch.sigmoid(self.gate(x)))


def wavenet() -> Example:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv1d(1, 64, 1), *[Gated(64, 2**i) for i in range(6)])
    net.append(nn.Conv1d(64, 256, 1))
    return net.eval(), (torch.randn(1, 1, 4000),)


class PointNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.points = nn.Sequential(
            nn.Conv1d(3, 64, 1),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Conv1d(64, 128, 1),
            nn.BatchNorm1d(128),
            nn.ReLU(),
            nn.Conv1d(128, 1024, 1),
        )
        self.head = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Linear(256, 40))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.points(x).amax(dim=2))


def pointnet() -> Example:
    torch.manual_seed(0)
    return PointNet().eval(), (torch.randn(1, 3, 2048),)


class WindowAttention(nn.Module):
    """Swin's shifted-window attention on a (batch, height, width, channels) map."""

    def __init__(self, channels: int = 96, heads: int = 3, window: int = 7) -> None:
        super().__init__()
        self.window, self.heads = window, heads
        self.qkv = nn.Linear(channels, 3 * channels)
        self.proj = nn.Linear(channels, channels)
        self.norm = nn.LayerNorm(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        k, d = self.window, c // self.heads
        shifted = torch.roll(self.norm(x), shifts=(-3, -3), dims=(1, 2))
        windows = shifted.view(b, h // k, k, w // k, k, c).permute(0, 1, 3, 2, 4, 5)
        t = windows.reshape(-1, k * k, c)
        qkv = self.qkv(t).reshape(t.shape[0], k * k, 3, self.heads, d).permute(2, 0, 3, 1, 4)
        q, key, v = qkv[0], qkv[1], qkv[2]
        attention = torch.softmax(q @ key.transpose(-2, -1) * d**-0.5, dim=-1)
        o = self.proj((attention @ v).transpose(1, 2).reshape(-1, k * k, c))
        o = o.view(b, h // k, w // k, k, k, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return x + torch.roll(o, shifts=(3, 3), dims=(1, 2))


def swin_block() -> Example:
    torch.manual_seed(0)
    return WindowAttention().eval(), (torch.randn(1, 56, 56, 96),)
