"""Operands reach TVM's operators in the dtype PyTorch computes in (tcl.integrations.tvm.promotion):
TVM's importer keeps a tensor's dtype and makes a scalar one of it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import imported_output

INTEGERS = torch.arange(-10, 10).reshape(4, 5)
FLOATS = torch.linspace(-7.5, 7.5, 20).reshape(4, 5)
PROMOTION = {
    "integers times a float": (lambda t: t * 0.5, INTEGERS),
    "integers plus a float": (lambda t: t + 0.5, INTEGERS),
    "integers divided": (lambda t: t / 4, INTEGERS),
    "integers divided by integers": (lambda t: t / (t.abs() + 3), INTEGERS),
    "integers at least a float": (lambda t: (t >= 0.5).float(), INTEGERS),
    "a float minus integers": (lambda t: 1.5 - t, INTEGERS),
    "integers clamped by floats": (lambda t: t.clamp(-2.5, 3.5), INTEGERS),
    "booleans times a float": (lambda t: (t > 0) * 1.5, FLOATS),
    "add with alpha": (lambda t: torch.add(t, t * 3, alpha=2), FLOATS),
    "sub with alpha": (lambda t: torch.sub(t, t * 3, alpha=0.5), FLOATS),
    "floats floor-divided": (lambda t: t // 3, FLOATS),
    "integers floor-divided": (lambda t: t // 3, INTEGERS),
    "floats divided, truncated": (lambda t: torch.div(t, 4, rounding_mode="trunc"), FLOATS),
    "integers divided, truncated": (lambda t: torch.div(t, 4, rounding_mode="trunc"), INTEGERS),
    "integers modulo": (lambda t: t % 3, INTEGERS),
    "exp of integers": (torch.exp, INTEGERS),
    "sigmoid of integers": (torch.sigmoid, INTEGERS),
    "reciprocal of integers": (lambda t: torch.reciprocal(t + 20), INTEGERS),
    "square root of integers": (lambda t: t.abs() ** 0.5, INTEGERS),
    "cumulative sum of booleans": (lambda t: (t > 0).cumsum(1), FLOATS),
    "finite (booleans multiplied)": (lambda t: torch.isfinite(t / (t > 0)), FLOATS),
    "booleans added": (lambda t: (t > 0) + (t < -5), FLOATS),
}


@pytest.mark.parametrize("name", list(PROMOTION))
def test_operands_are_promoted_as_pytorch_promotes_them(name: str) -> None:
    # TVM makes a scalar a constant of the tensor's dtype: i * 0.5 was i * 0, an integer result
    f, x = PROMOTION[name]
    expected = f(x).numpy()
    got = imported_output(f, x)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


MIXED = {
    "cat of integers and floats": lambda i, x: torch.cat([i, x]),
    "stack of integers and floats": lambda i, x: torch.stack([x, i]),
    "where between integers and floats": lambda i, x: torch.where(x > 0, i, x),
    "integers plus floats": lambda i, x: i + x,
}


@pytest.mark.parametrize("name", list(MIXED))
def test_tensors_of_two_dtypes_are_promoted_as_pytorch_promotes_them(name: str) -> None:
    f = MIXED[name]
    expected = f(INTEGERS, FLOATS).numpy()
    got = imported_output(f, INTEGERS, FLOATS)
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_cat_skips_empty_tensors_of_any_rank_as_pytorch_does() -> None:
    # Hugging Face's key-value cache starts as a tensor of shape (0,) and is concatenated with
    # the keys (1, heads, tokens, dim); TVM's concatenation refused the ranks' mismatch.
    def f(x: torch.Tensor, empty: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.tensor([]), x.view(1, 2, 2, 5), empty], dim=-2)

    got = imported_output(f, FLOATS, torch.zeros(0))
    np.testing.assert_array_equal(got, f(FLOATS, torch.zeros(0)).numpy())
