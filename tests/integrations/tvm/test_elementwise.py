"""Elementwise operators TVM 0.27's importer has no converter for (tcl.integrations.tvm.elementwise)
compute what PyTorch computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import imported_output

VALUES = torch.randn(6, 5, generator=torch.Generator().manual_seed(4))
SPECIAL = torch.tensor([0.0, -0.0, 1.5, -2.0, float("inf"), -float("inf"), float("nan"), 3.0])
EXACT = {
    "signbit, -0.0 and -inf included": (lambda a: torch.signbit(a).float(), SPECIAL),
    "copysign from a tensor": (lambda a: torch.copysign(a + 1, a.flip(0)), SPECIAL),
    "copysign from a number": (lambda a: torch.copysign(a, -1.0), SPECIAL),
    "fmax ignores NaN": (lambda a: torch.fmax(a, a.roll(1)), SPECIAL),
    "fmin ignores NaN": (lambda a: torch.fmin(a.roll(3), a), SPECIAL),
    "shifts of integers": (
        lambda a: (
            (((a * 100).int() << 2) >> 1).float()
            + torch.bitwise_left_shift(3, (a.abs() * 2).long())
        ),
        VALUES,
    ),
    "an arithmetic right shift by a tensor": (
        lambda a: ((a * 1000).long() >> (a.abs() * 3).long()).float(),
        VALUES,
    ),
    "exp2 of integers": (lambda a: torch.exp2((4 * a).round().long()), VALUES),
}


@pytest.mark.parametrize("name", list(EXACT))
def test_elementwise_operators_are_exact_as_in_pytorch(name: str) -> None:
    f, x = EXACT[name]
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())


def test_exp2_of_floats() -> None:
    # float32 pow against exp2: a few ulp
    got = imported_output(torch.exp2, VALUES)
    np.testing.assert_allclose(got, torch.exp2(VALUES).numpy(), rtol=1e-6)


def test_erfinv_within_what_float32_erf_allows() -> None:
    # Two Halley steps from Winitzki's form solve erf(x) = y to float32's erf, which is correct
    # to about 6e-8: x is then off by ~6e-8 / erf'(x), 1.5e-6 at |y| = 0.99 and 8e-4 at 0.99999.
    inner = torch.linspace(-0.99, 0.99, 199)
    np.testing.assert_allclose(
        imported_output(torch.erfinv, inner), torch.erfinv(inner).numpy(), rtol=1e-6, atol=2e-6
    )
    edge = torch.tensor([0.99999, -0.99999, 1e-7, 0.0])
    np.testing.assert_allclose(
        imported_output(torch.erfinv, edge), torch.erfinv(edge).numpy(), rtol=0, atol=1e-3
    )
    limits = torch.tensor([1.0, -1.0, 1.5, -2.0])
    np.testing.assert_array_equal(imported_output(torch.erfinv, limits), torch.erfinv(limits))
