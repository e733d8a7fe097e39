"""Operators TVM 0.27's importer has no converter for compute what PyTorch computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tcl.errors import TclError
from tcl.zoo.extract import export_program, import_program

from conftest import applying, imported_output

VALUES = torch.randn(6, 5, generator=torch.Generator().manual_seed(3))
ELEMENTWISE = {
    "torch.hypot": lambda a: torch.hypot(a, 2 * a),
    "torch.logcumsumexp": lambda a: torch.logcumsumexp(a, 1),
    "logcumsumexp where a later element dwarfs the earlier": lambda a: torch.logcumsumexp(
        300 * a, 0
    ),
    "F.rrelu in evaluation": lambda a: F.rrelu(a, 0.1, 0.3, training=False),
    "nn.Bilinear": torch.nn.Bilinear(5, 5, 3),
}


@pytest.mark.parametrize("name", list(ELEMENTWISE))
def test_operators_tvm_lacks_compute_as_in_pytorch(name: str) -> None:
    f = ELEMENTWISE[name]
    with torch.no_grad():
        expected = (f(VALUES, VALUES.flip(0)) if name == "nn.Bilinear" else f(VALUES)).numpy()
    inputs = (VALUES, VALUES.flip(0)) if name == "nn.Bilinear" else (VALUES,)
    # float32 exp / log / sqrt and sums of 5-25 terms: a few ulp of values up to ~900
    np.testing.assert_allclose(imported_output(f, *inputs), expected, rtol=1e-5, atol=1e-5)


def test_rrelu_in_training_is_refused() -> None:
    random_slopes = applying(lambda a: F.rrelu(a, training=True))
    with pytest.raises(TclError, match="training mode draws random slopes"):
        import_program(export_program(random_slopes, (VALUES,)))


BOUNDARIES = torch.tensor([-1.0, 0.0, 0.5, 0.5, 1.0])  # a repeat: left and right differ
ROW_REDUCTIONS = {
    "triu_indices": lambda a: a[tuple(torch.triu_indices(6, 5, 1))],
    "tril_indices": lambda a: a[tuple(torch.tril_indices(6, 5, -1))],
    "cdist": lambda a: torch.cdist(a, 2 * a.flip(0)),
    "cdist, batched, p = 1": lambda a: torch.cdist(a.view(2, 3, 5), a.view(2, 3, 5).flip(1), p=1),
    "cdist, p = 3": lambda a: torch.cdist(a, 2 * a, p=3),
    "cdist, p = inf": lambda a: torch.cdist(a, 2 * a, p=float("inf")),
    "var_mean": lambda a: torch.stack(torch.var_mean(a, 1, correction=0)),
    "var_mean of everything, kept": lambda a: torch.stack(torch.var_mean(a, keepdim=True)),
    "prod along an axis": lambda a: a.prod(1, keepdim=True),
    "kthvalue": lambda a: a.kthvalue(2, 1).values,
    "kthvalue's position, kept": lambda a: a.kthvalue(3, 0, keepdim=True).indices.float(),
    "searchsorted": lambda a: torch.searchsorted(BOUNDARIES, a).float(),
    "searchsorted, right": lambda a: torch.searchsorted(BOUNDARIES, a.round(), right=True).float(),
    "searchsorted, a row each": lambda a: torch.searchsorted(
        a.sort(1).values, a.flip(1)[:, :3].contiguous(), side="right"
    ).float(),
    "cummax": lambda a: torch.cummax(a, 1).values,
    "cummax's positions": lambda a: torch.cummax(a, 0).indices.float(),
    "cummin of integers, ties the last": lambda a: torch.cummin((2 * a).round().long(), 1)[
        1
    ].float(),
    "histc": lambda a: torch.histc(a, 6, -1.5, 1.5),
    "histc over the data's range": lambda a: torch.histc(a, 4),
}


@pytest.mark.parametrize("name", list(ROW_REDUCTIONS))
def test_reductions_over_rows_as_in_pytorch(name: str) -> None:
    f = ROW_REDUCTIONS[name]
    # norms of 5 differences: a few float32 ulp of values up to ~20
    np.testing.assert_allclose(imported_output(f, VALUES), f(VALUES).numpy(), rtol=1e-5, atol=1e-5)


def _compiled_output(module: torch.nn.Module, *inputs: torch.Tensor) -> np.ndarray:
    """``module`` itself exported (its weights its own, as a model's are), imported, compiled
    for this CPU and run on ``inputs``."""
    import tvm
    from tvm import relax

    mod = import_program(export_program(module, inputs))
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in inputs])
    return (out if hasattr(out, "numpy") else out[0]).numpy()  # type: ignore[no-any-return]


def test_embedding_max_norm_renormalises_the_rows_looked_up() -> None:
    # nn.Embedding(max_norm=...) scales the rows it reads in place (aten.embedding_renorm): a
    # weight tied to the output layer sees those rows scaled and the others as they were
    class Tied(torch.nn.Module):
        def __init__(self, norm_type: float) -> None:
            super().__init__()
            self.embedding = torch.nn.Embedding(12, 4, max_norm=1.5, norm_type=norm_type)
            with torch.no_grad():
                weight = torch.randn(12, 4, generator=torch.Generator().manual_seed(0))
                self.embedding.weight.copy_(weight)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            return self.embedding(tokens) @ self.embedding.weight.T

    tokens = torch.tensor([[1, 3, 3, 7], [0, 11, 1, 2]])
    for norm_type in (2.0, 1.0):
        with torch.no_grad():
            expected = Tied(norm_type)(tokens).numpy()  # eager renormalises its own copy
        got = _compiled_output(Tied(norm_type), tokens)  # a fresh copy, renormalised by TVM
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
