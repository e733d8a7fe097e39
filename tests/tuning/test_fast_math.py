"""tcl.tuning.fast_math: GELU, erf, exp, tanh, sigmoid, SiLU and softmax become TVM's fast
approximations in float32 (and only there), within a few float32 roundings of the exact
functions."""

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
    def __init__(self, silu: bool = True) -> None:
        super().__init__()
        self.silu = silu

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        f = torch.nn.functional
        return (
            f.gelu(x),
            f.gelu(x, approximate="tanh"),
            torch.exp(x),
            torch.erf(x),
            torch.tanh(x),
            torch.sigmoid(x),
            *((f.silu(x),) if self.silu else ()),
            torch.softmax(x, -1),
        )


def _run(mod: object, x: np.ndarray) -> list[np.ndarray]:
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    out = vm["main"](tvm.runtime.tensor(x))
    return [out.numpy()] if hasattr(out, "numpy") else [o.numpy() for o in out]


def test_fast_forms_agree_with_the_exact_functions_to_float32_rounding() -> None:
    x = torch.linspace(-12, 12, 8192).reshape(8, 1024)
    mod = import_network(_Ops(), x)
    fast = fast_math(mod)
    assert "fast_erf" in fast.script() and "fast_sigmoid" in fast.script()
    assert "fast_" not in mod.script()  # the input module is left as it was
    exact = _Ops()(x.double())
    for name, got, want in zip(
        ["gelu", "gelu_tanh", "exp", "erf", "tanh", "sigmoid", "silu", "softmax"],
        _run(fast, x.numpy()),
        [t.numpy() for t in exact],
        strict=True,
    ):
        error = np.abs(got - want) / np.maximum(np.abs(want), 1.0)
        assert error.max() <= ULPS, (name, float(error.max()))


def test_other_dtypes_keep_the_exact_functions() -> None:
    x = torch.linspace(-3, 3, 64).reshape(2, 32).to(torch.float16)
    mod = import_network(_Ops(silu=False), x)
    assert "fast_" not in fast_math(mod).script()


def test_a_half_silu_computes_its_sigmoid_in_float32_and_gets_the_fast_form() -> None:
    # PyTorch's SiLU of a float16 tensor is imported as float32 arithmetic between two casts
    x = torch.linspace(-12, 12, 64).reshape(2, 32).to(torch.float16)
    fast = fast_math(import_network(torch.nn.SiLU(), x))
    assert "fast_sigmoid" in fast.script()
    (got,) = _run(fast, x.numpy())
    want = torch.nn.functional.silu(x.double()).numpy()
    # float16 keeps 11 significant bits: the float32 SiLU (a few float32 roundings off) rounded
    # once to them is at most one float16 unit in the last place away, relative
    error = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want), 1.0)
    assert error.max() <= 2.0**-10


def test_a_relax_silu_gets_the_fast_sigmoid() -> None:
    # an IRModule written with R.nn.silu (tcl.tune takes one), not imported from PyTorch
    from tvm import relax

    builder = relax.BlockBuilder()
    arg = relax.Var("x", relax.TensorType([4, 256], "float32"))
    with builder.function("main", [arg]):
        with builder.dataflow():
            out = builder.emit_output(relax.op.nn.silu(arg))
        builder.emit_func_output(out)
    fast = fast_math(builder.get())
    assert "T.reinterpret" in fast.script() and "R.nn.silu" not in fast.script()
    x = np.linspace(-12, 12, 1024, dtype="float32").reshape(4, 256)
    (got,) = _run(fast, x)
    want = torch.nn.functional.silu(torch.from_numpy(x).double()).numpy()
    assert (np.abs(got - want) / np.maximum(np.abs(want), 1.0)).max() <= ULPS


def test_the_fast_sigmoid_saturates_as_the_exact_one_does() -> None:
    # past float32's exp range the clamped exp is 0 or infinity: 1 / (1 + inf) is 0, not NaN
    x = torch.tensor([[-1e30, -1e4, -100.0, -88.5, -30.0, 30.0, 88.5, 100.0, 1e4, 1e30]])
    (got,) = _run(fast_math(import_network(torch.nn.Sigmoid(), x)), x.numpy())
    want = torch.sigmoid(x.double()).numpy()
    assert np.isfinite(got).all() and np.abs(got - want).max() <= ULPS
