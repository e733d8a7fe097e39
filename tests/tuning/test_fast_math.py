"""tcl.tuning.fast_math: GELU, erf, exp, tanh and softmax become TVM's fast approximations in
float32 (and only there), within a few float32 roundings of the exact functions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tcl.tuning.fast_math import fast_math
from tcl.zoo.extract import import_network

pytestmark = pytest.mark.tvm

# float32 carries 24 significant bits; a polynomial approximation evaluated in float32 is
# accurate to a few roundings: 16 units in the last place, relative (absolute below 1).
ULPS = 16 * 2.0**-23


class _Ops(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        f = torch.nn.functional
        return (
            f.gelu(x),
            f.gelu(x, approximate="tanh"),
            torch.exp(x),
            torch.erf(x),
            torch.tanh(x),
            torch.softmax(x, -1),
        )


def _run(mod: object, x: np.ndarray) -> list[np.ndarray]:
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    return [o.numpy() for o in vm["main"](tvm.runtime.tensor(x))]


def test_fast_forms_agree_with_the_exact_functions_to_float32_rounding() -> None:
    x = torch.linspace(-12, 12, 8192).reshape(8, 1024)
    mod = import_network(_Ops(), x)
    fast = fast_math(mod)
    assert "fast_erf" in fast.script() and "fast_exp" in fast.script()
    assert "fast_" not in mod.script()  # the input module is left as it was
    exact = _Ops()(x.double())
    for name, got, want in zip(
        ["gelu", "gelu_tanh", "exp", "erf", "tanh", "softmax"],
        _run(fast, x.numpy()),
        [t.numpy() for t in exact],
        strict=True,
    ):
        error = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
        assert error.max() <= ULPS, (name, float(error.max()))


def test_other_dtypes_keep_the_exact_functions() -> None:
    x = torch.linspace(-3, 3, 64).reshape(2, 32).to(torch.float16)
    mod = import_network(_Ops(), x)
    assert "fast_" not in fast_math(mod).script()
