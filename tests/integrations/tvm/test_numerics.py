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
}


@pytest.mark.parametrize("name", list(ROW_REDUCTIONS))
def test_reductions_over_rows_as_in_pytorch(name: str) -> None:
    f = ROW_REDUCTIONS[name]
    # norms of 5 differences: a few float32 ulp of values up to ~20
    np.testing.assert_allclose(imported_output(f, VALUES), f(VALUES).numpy(), rtol=1e-5, atol=1e-5)
