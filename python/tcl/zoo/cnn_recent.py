"""Convolutional networks of the zoo's second generation, in plain PyTorch: the operator families
of current vision models that the classic ones (:mod:`tcl.zoo.cnn`) lack.

- ConvNeXt: 7x7 depthwise convolutions, LayerNorm over channels, channels-last inverted
  bottlenecks with GELU.
- EfficientNet: SiLU, squeeze-excite with a sigmoid gate, 5x5 depthwise convolutions.
- RegNetX: grouped 3x3 convolutions of a fixed group width.
- ShuffleNet V2: channel split and shuffle around depthwise convolutions.
- U-Net: max pooling, nearest upsampling and skip concatenation at every scale.
- DeepLabV3: dilated convolutions (atrous pyramid) and bilinear upsampling.

Structures follow the papers at reduced width where noted; weights are random and scaled by
:func:`tcl.zoo.cnn.scaled`, like the classic networks.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional

from tcl.zoo.cnn import conv_bn, pooled_classifier


class ChannelsLastNorm(nn.Module):
    """LayerNorm over the channels of an NCHW map (ConvNeXt's downsampling norm)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(channels, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.mlp(self.norm(self.depthwise(x).permute(0, 2, 3, 1)))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


def convnext_atto(classes: int = 1000) -> nn.Module:
    """ConvNeXt at the 'atto' size (widths 40-320, depths 2-2-6-2)."""
    dims, depths = (40, 80, 160, 320), (2, 2, 6, 2)
    layers: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), ChannelsLastNorm(dims[0])]
    for i, (dim, depth) in enumerate(zip(dims, depths, strict=True)):
        if i > 0:
            layers += [ChannelsLastNorm(dims[i - 1]), nn.Conv2d(dims[i - 1], dim, 2, 2)]
        layers += [ConvNeXtBlock(dim) for _ in range(depth)]
    layers += [
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.LayerNorm(dims[-1]),
        nn.Linear(320, classes),
    ]
    return nn.Sequential(*layers)


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, squeeze-excite with a sigmoid gate, project."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, expand: int) -> None:
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.SiLU()]
        layers += [
            nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            nn.SiLU(),
        ]
        self.expand = nn.Sequential(*layers)
        squeezed = max(1, cin // 4)
        self.squeeze = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(mid, squeezed, 1),
            nn.SiLU(),
            nn.Conv2d(squeezed, mid, 1),
            nn.Sigmoid(),
        )
        self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.expand(x)
        y = self.project(y * self.squeeze(y))
        return x + y if self.residual else y


def efficientnet_b0(classes: int = 1000) -> nn.Module:
    # (expand, kernel, out, repeats, stride)
    settings = [
        (1, 3, 16, 1, 1),
        (6, 3, 24, 2, 2),
        (6, 5, 40, 2, 2),
        (6, 3, 80, 3, 2),
        (6, 5, 112, 3, 1),
        (6, 5, 192, 4, 2),
        (6, 3, 320, 1, 1),
    ]
    layers: list[nn.Module] = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU()]
    cin = 32
    for expand, k, cout, repeats, stride in settings:
        for i in range(repeats):
            layers.append(MBConv(cin, cout, k, stride if i == 0 else 1, expand))
            cin = cout
    return nn.Sequential(*layers, *pooled_classifier(cin, 1280, classes, nn.SiLU))


class RegNetBlock(nn.Module):
    """RegNetX's residual bottleneck (ratio 1) with grouped 3x3 convolutions."""

    def __init__(self, cin: int, cout: int, stride: int, group_width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, cout, 1),
            conv_bn(cout, cout, 3, stride, groups=cout // group_width),
            conv_bn(cout, cout, 1, act=False),
        )
        self.down = conv_bn(cin, cout, 1, stride, act=False) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


def regnetx_400mf(classes: int = 1000) -> nn.Module:
    widths, depths, group_width = (32, 64, 160, 384), (1, 2, 7, 12), 16
    layers: list[nn.Module] = [conv_bn(3, 32, 3, 2)]
    cin = 32
    for width, depth in zip(widths, depths, strict=True):
        for j in range(depth):
            layers.append(RegNetBlock(cin, width, 2 if j == 0 else 1, group_width))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, h, w = x.shape
    return x.reshape(b, groups, c // groups, h, w).transpose(1, 2).reshape(b, c, h, w)


class ShuffleBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        half = cout // 2
        branch_in = cin if stride > 1 else half
        self.branch = nn.Sequential(
            conv_bn(branch_in, half, 1),
            conv_bn(half, half, 3, stride, groups=half, act=False),
            conv_bn(half, half, 1),
        )
        self.shortcut = (
            nn.Sequential(
                conv_bn(cin, cin, 3, stride, groups=cin, act=False), conv_bn(cin, half, 1)
            )
            if stride > 1
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.shortcut is None:
            kept, x = x.chunk(2, dim=1)
            out = torch.cat([kept, self.branch(x)], 1)
        else:
            out = torch.cat([self.shortcut(x), self.branch(x)], 1)
        return channel_shuffle(out, 2)


def shufflenet_v2(classes: int = 1000) -> nn.Module:
    widths, depths = (116, 232, 464), (4, 8, 4)
    layers: list[nn.Module] = [conv_bn(3, 24, 3, 2), nn.MaxPool2d(3, 2, 1)]
    cin = 24
    for width, depth in zip(widths, depths, strict=True):
        for j in range(depth):
            layers.append(ShuffleBlock(cin, width, 2 if j == 0 else 1))
            cin = width
    return nn.Sequential(*layers, *pooled_classifier(cin, 1024, classes))


class UNet(nn.Module):
    """U-Net at a quarter of the paper's width: pooling down, nearest upsampling back up, the
    encoder's map concatenated at every scale."""

    def __init__(self, width: int = 16, levels: int = 4, classes: int = 2) -> None:
        super().__init__()

        def double(cin: int, cout: int) -> nn.Sequential:
            return nn.Sequential(conv_bn(cin, cout, 3), conv_bn(cout, cout, 3))

        widths = [width * 2**i for i in range(levels + 1)]
        self.down = nn.ModuleList([double(3, widths[0])])
        self.down.extend(double(widths[i], widths[i + 1]) for i in range(levels))
        self.up = nn.ModuleList(
            double(widths[i + 1] + widths[i], widths[i]) for i in reversed(range(levels))
        )
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else functional.max_pool2d(x, 2))
            skips.append(x)
        for block, skip in zip(self.up, reversed(skips[:-1]), strict=True):
            x = block(torch.cat([functional.interpolate(x, scale_factor=2.0), skip], 1))
        return self.head(x)


def unet() -> nn.Module:
    return UNet()


class AtrousPyramid(nn.Module):
    """DeepLabV3's ASPP: parallel dilated convolutions and an image-level pooled branch."""

    def __init__(self, cin: int, cout: int, rates: tuple[int, ...] = (6, 12, 18)) -> None:
        super().__init__()
        self.branches = nn.ModuleList([conv_bn(cin, cout, 1)])
        for rate in rates:
            self.branches.append(
                nn.Sequential(
                    nn.Conv2d(cin, cout, 3, padding=rate, dilation=rate, bias=False),
                    nn.BatchNorm2d(cout),
                    nn.ReLU(),
                )
            )
        self.pooled = nn.Sequential(nn.AdaptiveAvgPool2d(1), conv_bn(cin, cout, 1))
        self.project = conv_bn(cout * (len(rates) + 2), cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.pooled(x).expand(-1, -1, x.shape[2], x.shape[3])
        return self.project(torch.cat([b(x) for b in self.branches] + [pooled], 1))


class DilatedBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, dilation: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.down = conv_bn(cin, cout, 1, stride, act=False) if stride != 1 or cin != cout else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class DeepLabV3(nn.Module):
    """DeepLabV3 on a ResNet-18-style backbone at output stride 8: the last two stages keep
    their resolution and dilate instead; logits are upsampled bilinearly to the input."""

    def __init__(self, classes: int = 21) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            conv_bn(3, 64, 7, 2),
            nn.MaxPool2d(3, 2, 1),
            DilatedBlock(64, 64, 1, 1),
            DilatedBlock(64, 128, 2, 1),
            DilatedBlock(128, 256, 1, 2),
            DilatedBlock(256, 256, 1, 4),
        )
        self.aspp = AtrousPyramid(256, 128)
        self.head = nn.Conv2d(128, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.aspp(self.backbone(x)))
        return functional.interpolate(
            logits, size=(x.shape[2], x.shape[3]), mode="bilinear", align_corners=False
        )


def deeplab_v3() -> nn.Module:
    return DeepLabV3()
