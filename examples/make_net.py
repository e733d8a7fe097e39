"""A small CNN outside tcl's zoo, saved as a torch.export program: the README's *Tune your own
model* tunes it. Usage: python examples/make_net.py [OUT.pt2] (default net.pt2), and writes the
input the README runs the library on, x.npy."""

import sys

import numpy as np
import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv2(torch.relu(self.conv1(x))))
        return self.head(x.mean(dim=(2, 3)))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "net.pt2"
    torch.manual_seed(0)  # the same weights, and so the same outputs, on every machine
    program = torch.export.export(Net().eval(), (torch.randn(1, 3, 64, 64),))
    torch.export.save(program, out)
    np.save("x.npy", np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype("float32"))
    print(f"wrote {out} and x.npy")
