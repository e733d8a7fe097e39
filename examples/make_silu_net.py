"""A small CNN with SiLU activations outside tcl's zoo (convolution, batch norm and SiLU blocks,
a depthwise one among them, then a GELU head), saved as a torch.export program for a 160x160
input: bench/README.md's *Does fast math's sigmoid help a SiLU network?* tunes it.
Usage: python examples/make_silu_net.py [OUT.pt2] (default silu_net.pt2)."""

import sys

import torch
from torch import nn


def block(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, groups=groups),
        nn.BatchNorm2d(cout),
        nn.SiLU(),
    )


class SiluNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            block(3, 32, 3, stride=2),
            block(32, 32, 3, groups=32),
            block(32, 64, 1),
            block(64, 128, 3, stride=2),
            block(128, 128, 3, stride=2),
        )
        self.head = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "silu_net.pt2"
    torch.manual_seed(0)
    program = torch.export.export(SiluNet().eval(), (torch.randn(1, 3, 160, 160),))
    torch.export.save(program, out)
    print(f"wrote {out}")
