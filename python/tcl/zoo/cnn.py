"""Convolutional networks of the zoo in plain PyTorch (torchvision does not import beside the
CPU torch build here). Structures follow the torchvision/paper definitions; weights are random,
which does not change the tensor programs, but are scaled (:func:`scaled`) so that the output
depends on the input: a tuned build is checked against PyTorch's output."""

from __future__ import annotations

import math

import torch
from torch import nn


def scaled(net: nn.Module, input_shape: tuple[int, ...]) -> nn.Module:
    """``net`` in eval mode, with weights that keep its activations at unit scale for inputs of
    ``input_shape``.

    PyTorch's default initialisation, with batch norms at their initial statistics, shrinks
    activations about tenfold per MobileNet block: the output is the classifier's bias to 1e-7
    whatever the input, and a wrong build would match it. Convolutions are initialised as
    torchvision initialises them, and every batch norm takes the statistics of a random batch
    (inputs of ``input_shape``, a fixed seed), as a trained network's batch norms normalise
    its data. The statistics depend on the spatial size: a network scaled for 32x32 inputs
    grows its activations 100-1000x on 224x224 ones.
    """
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    norms = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative: the statistics of exactly the batch below
    # Enough inputs that the last, smallest feature maps still give each channel a spread (a
    # generator's input is a vector: its first maps are 4x4).
    pixels = math.prod(input_shape[2:]) if len(input_shape) > 2 else 1024
    size = max(2, -(-16384 // pixels))
    batch = torch.randn((size, *input_shape[1:]), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        net.train()(batch)
    for m, momentum in zip(norms, momenta, strict=True):
        m.momentum = momentum
    return net.eval()


def conv_bn(
    cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: bool = True
) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
    ]
    if act:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


def pooled_classifier(
    cin: int, width: int, classes: int, act: type[nn.Module] = nn.ReLU
) -> list[nn.Module]:
    """The head of MobileNet-style networks: 1x1 convolution to ``width`` with batch norm and
    ``act``, global average pooling, a linear classifier."""
    return [
        *conv_bn(cin, width, 1, act=False),
        act(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, classes),
    ]


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(
        self, cin: int, width: int, stride: int, groups: int = 1, base_width: int = 64
    ) -> None:
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, width, 3, stride), conv_bn(width, width, 3, act=False)
        )
        self.down = (
            conv_bn(cin, width, 1, stride, act=False) if stride != 1 or cin != width else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(
        self, cin: int, width: int, stride: int, groups: int = 1, base_width: int = 64
    ) -> None:
        super().__init__()
        mid = int(width * base_width / 64) * groups
        out = width * 4
        self.body = nn.Sequential(
            conv_bn(cin, mid, 1),
            conv_bn(mid, mid, 3, stride, groups=groups),
            conv_bn(mid, out, 1, act=False),
        )
        self.down = conv_bn(cin, out, 1, stride, act=False) if stride != 1 or cin != out else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.body(x) + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    def __init__(
        self,
        block: type[BasicBlock] | type[Bottleneck],
        depths: list[int],
        groups: int = 1,
        base_width: int = 64,
        classes: int = 1000,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
        cin = 64
        for i, depth in enumerate(depths):
            width = 64 * 2**i
            for j in range(depth):
                layers.append(block(cin, width, 2 if j == 0 and i > 0 else 1, groups, base_width))
                cin = width * block.expansion
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def resnet18() -> nn.Module:
    return ResNet(BasicBlock, [2, 2, 2, 2])


def resnet34() -> nn.Module:
    return ResNet(BasicBlock, [3, 4, 6, 3])


def resnet50() -> nn.Module:
    return ResNet(Bottleneck, [3, 4, 6, 3])


def resnext50() -> nn.Module:
    return ResNet(Bottleneck, [3, 4, 6, 3], groups=32, base_width=4)


class InvertedResidual(nn.Module):
    def __init__(
        self,
        cin: int,
        cout: int,
        stride: int,
        expand: int,
        k: int = 3,
        act: type[nn.Module] = nn.ReLU6,
        se: bool = False,
    ) -> None:
        super().__init__()
        mid = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), act()]
        layers += [
            nn.Conv2d(mid, mid, k, stride, k // 2, groups=mid, bias=False),
            nn.BatchNorm2d(mid),
            act(),
        ]
        if se:
            layers.append(SqueezeExcite(mid))
        layers += [nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        squeezed = max(8, channels // 4)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        return x * nn.functional.hardsigmoid(self.fc2(torch.relu(self.fc1(s))))


def mobilenet_v2(classes: int = 1000) -> nn.Module:
    settings = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ]
    layers: list[nn.Module] = [conv_bn(3, 32, 3, 2)]
    cin = 32
    for expand, cout, repeats, stride in settings:
        for i in range(repeats):
            layers.append(InvertedResidual(cin, cout, stride if i == 0 else 1, expand))
            cin = cout
    return nn.Sequential(*layers, *pooled_classifier(cin, 1280, classes))


def mobilenet_v3_small(classes: int = 1000) -> nn.Module:
    # (kernel, expanded, out, squeeze-excite, hard-swish, stride)
    settings = [
        (3, 16, 16, True, False, 2),
        (3, 72, 24, False, False, 2),
        (3, 88, 24, False, False, 1),
        (5, 96, 40, True, True, 2),
        (5, 240, 40, True, True, 1),
        (5, 240, 40, True, True, 1),
        (5, 120, 48, True, True, 1),
        (5, 144, 48, True, True, 1),
        (5, 288, 96, True, True, 2),
        (5, 576, 96, True, True, 1),
        (5, 576, 96, True, True, 1),
    ]
    layers: list[nn.Module] = [
        nn.Conv2d(3, 16, 3, 2, 1, bias=False),
        nn.BatchNorm2d(16),
        nn.Hardswish(),
    ]
    cin = 16
    for k, mid, cout, se, hswish, stride in settings:
        act = nn.Hardswish if hswish else nn.ReLU
        layers.append(InvertedResidual(cin, cout, stride, max(1, mid // cin), k, act, se))
        cin = cout
    layers += [
        nn.Conv2d(cin, 576, 1, bias=False),
        nn.BatchNorm2d(576),
        nn.Hardswish(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(576, 1024),
        nn.Hardswish(),
        nn.Linear(1024, classes),
    ]
    return nn.Sequential(*layers)


def vgg(depths: list[int], classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = []
    cin = 3
    for i, depth in enumerate(depths):
        cout = min(64 * 2**i, 512)
        for _ in range(depth):
            layers += [nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True)]
            cin = cout
        layers.append(nn.MaxPool2d(2))
    layers += [
        nn.AdaptiveAvgPool2d(7),
        nn.Flatten(),
        nn.Linear(512 * 49, 4096),
        nn.ReLU(inplace=True),
        nn.Linear(4096, 4096),
        nn.ReLU(inplace=True),
        nn.Linear(4096, classes),
    ]
    return nn.Sequential(*layers)


def vgg11() -> nn.Module:
    return vgg([1, 1, 2, 2, 2])


def vgg16() -> nn.Module:
    return vgg([2, 2, 3, 3, 3])


class DenseLayer(nn.Module):
    def __init__(self, cin: int, growth: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin),
            nn.ReLU(),
            nn.Conv2d(cin, 4 * growth, 1, bias=False),
            nn.BatchNorm2d(4 * growth),
            nn.ReLU(),
            nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, self.body(x)], 1)


def densenet121(classes: int = 1000) -> nn.Module:
    growth, cin = 32, 64
    layers: list[nn.Module] = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    for i, depth in enumerate([6, 12, 24, 16]):
        for _ in range(depth):
            layers.append(DenseLayer(cin, growth))
            cin += growth
        if i < 3:
            layers += [
                nn.BatchNorm2d(cin),
                nn.ReLU(),
                nn.Conv2d(cin, cin // 2, 1, bias=False),
                nn.AvgPool2d(2),
            ]
            cin //= 2
    layers += [
        nn.BatchNorm2d(cin),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(cin, classes),
    ]
    return nn.Sequential(*layers)


class Fire(nn.Module):
    def __init__(self, cin: int, squeeze: int, expand: int) -> None:
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU(inplace=True))
        self.e1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU(inplace=True))
        self.e3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


def squeezenet(classes: int = 1000) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, 2),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(64, 16, 64),
        Fire(128, 16, 64),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(128, 32, 128),
        Fire(256, 32, 128),
        nn.MaxPool2d(3, 2, ceil_mode=True),
        Fire(256, 48, 192),
        Fire(384, 48, 192),
        Fire(384, 64, 256),
        Fire(512, 64, 256),
        nn.Conv2d(512, classes, 1),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def dcgan_generator(latent: int = 100, width: int = 64) -> nn.Module:
    def up(cin: int, cout: int, stride: int, pad: int) -> list[nn.Module]:
        return [
            nn.ConvTranspose2d(cin, cout, 4, stride, pad, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(True),
        ]

    return nn.Sequential(
        nn.Unflatten(1, (latent, 1, 1)),
        *up(latent, width * 8, 1, 0),
        *up(width * 8, width * 4, 2, 1),
        *up(width * 4, width * 2, 2, 1),
        *up(width * 2, width, 2, 1),
        nn.ConvTranspose2d(width, 3, 4, 2, 1, bias=False),
        nn.Tanh(),
    )
