"""The ATen operators tcl converts for TVM's PyTorch importer compute what PyTorch computes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tcl.errors import TclError
from tcl.zoo.extract import export_program, import_program

from conftest import applying, imported_output

FLOATS = torch.linspace(-7.5, 7.5, 20).reshape(4, 5)
X = torch.arange(30, dtype=torch.float32).reshape(2, 5, 3)  # every element tells where it was

INDEXING = {
    "last of an axis": lambda x: x[:, -1],
    "first axis from the end": lambda x: x[-2],
    "last axis": lambda x: x[..., -1],
    "positive index": lambda x: x[:, 3],
    "index list with negatives": lambda x: x[:, [-1, 0, -5]],
    "zipped index lists": lambda x: x[[-1, 0], [1, -2]],
    "index list and a slice": lambda x: x[:, [-1, 0], 1:],
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_negative_indices_count_from_the_end_as_in_pytorch(name: str) -> None:
    # TVM 0.27's own converters read out of bounds here (take's "fast" mode): garbage values.
    f = INDEXING[name]
    np.testing.assert_array_equal(imported_output(f, X), f(X).numpy())


def test_an_index_tensor_given_at_run_time_may_hold_negatives() -> None:
    def f(x: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        return x[:, i]

    for index in (torch.tensor([-1, 2, -5]), torch.tensor([0, 4, 1])):
        np.testing.assert_array_equal(imported_output(f, X, index), f(X, index).numpy())


CUBE = torch.arange(4 * 5 * 6 * 7, dtype=torch.float32).reshape(4, 5, 6, 7)
ROWS, COLUMNS = torch.tensor([0, 2, -1]), torch.tensor([1, 1, 3])
SEVERAL_INDICES = {
    "x[:, i, j]": lambda x: x[:, ROWS, COLUMNS],
    "x[:, :, i, j]": lambda x: x[:, :, ROWS, COLUMNS],
    "x[i, :, j] (not adjacent: their axis first)": lambda x: x[ROWS, :, COLUMNS],
    "x[:, i, :, j]": lambda x: x[:, ROWS, :, COLUMNS],
    "x[:, k, j], k a column": lambda x: x[:, ROWS.view(3, 1), COLUMNS],
    "x[i, j] (the first axes)": lambda x: x[ROWS, COLUMNS],
}


@pytest.mark.parametrize("name", list(SEVERAL_INDICES))
def test_several_index_tensors_pick_what_pytorch_picks(name: str) -> None:
    # TVM 0.27 kept an axis too many where a slice comes first (x[:, i, j]: (4, 3, 3, 7))
    f = SEVERAL_INDICES[name]
    np.testing.assert_array_equal(imported_output(f, CUBE), f(CUBE).numpy())


@pytest.mark.parametrize(
    "f",
    [
        lambda x: x.amax(1),
        lambda x: x.amin((0, 2), keepdim=True),
        lambda x: torch.amax(x, dim=-1, keepdim=False),
        lambda x: x.amax(),
    ],
)
def test_amax_and_amin_reduce_as_in_pytorch(f) -> None:
    x = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(0))
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())


@pytest.mark.parametrize(
    ("f", "shape"),
    [
        (lambda x: F.adaptive_max_pool2d(x, 1), (2, 3, 8, 6)),
        (lambda x: F.adaptive_max_pool2d(x, (5, 2)), (1, 3, 40, 6)),
        (lambda x: F.adaptive_max_pool1d(x, 4), (2, 3, 16)),
        (lambda x: F.adaptive_max_pool3d(x, (2, 1, 3)), (1, 2, 4, 5, 6)),
        # sizes that do not divide: PyTorch's overlapping windows (a pyramid pooling's 13 to 3)
        (lambda x: F.adaptive_max_pool2d(x, 3), (1, 3, 13, 13)),
        (lambda x: F.adaptive_max_pool2d(x, (4, 5)), (2, 3, 7, 6)),
        (lambda x: F.adaptive_max_pool1d(x, 5), (3, 7)),  # unbatched
        (lambda x: F.adaptive_max_pool3d(x, (3, 2, 4)), (1, 2, 5, 3, 7)),
    ],
)
def test_adaptive_max_pooling_takes_pytorchs_windows(f, shape: tuple[int, ...]) -> None:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())


def test_adaptive_max_pooling_indices_tcl_cannot_convert_say_why() -> None:
    indices = applying(lambda x: F.adaptive_max_pool2d(x, 2, return_indices=True)[1].float())
    with pytest.raises(TclError, match="reads the pooling's indices"):
        import_program(export_program(indices, (torch.zeros(1, 3, 8, 8),)))


NEAREST = {
    "32 to 40 pixels": (lambda x: F.interpolate(x, size=(40, 40)), (1, 3, 32, 32)),
    "40 to 32 pixels": (lambda x: F.interpolate(x, size=(32, 32)), (1, 3, 40, 40)),
    "sizes of their own": (lambda x: F.interpolate(x, size=(7, 13)), (1, 2, 5, 9)),
    "scale 1.3": (lambda x: F.interpolate(x, scale_factor=1.3), (1, 3, 32, 32)),
    "scale 0.7": (lambda x: F.interpolate(x, scale_factor=0.7), (1, 3, 33, 31)),
    "twice, by scale": (lambda x: F.interpolate(x, scale_factor=2), (1, 3, 5, 9)),
    "whole multiples, by size": (lambda x: F.interpolate(x, size=(10, 27)), (1, 3, 5, 9)),
}


@pytest.mark.parametrize("name", list(NEAREST))
def test_nearest_upsampling_picks_the_pixels_pytorch_picks(name: str) -> None:
    f, shape = NEAREST[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())


@pytest.mark.parametrize("f", [F.selu, F.elu, lambda t: F.elu(t, 0.5), lambda t: F.celu(t, 2.0)])
def test_elu_keeps_its_scales(f) -> None:
    # SELU decomposes into elu with scale 1.0507, which TVM's converter dropped
    expected = f(FLOATS).numpy()
    np.testing.assert_allclose(imported_output(f, FLOATS), expected, rtol=1e-5, atol=1e-6)


NON_FINITE_FILLS = {
    "a causal mask (nn.Transformer's)": lambda x: x + torch.full((4, 5), float("-inf")).triu(1),
    "full_like": lambda x: torch.maximum(x, torch.full_like(x, float("-inf"))),
    "new_full": lambda x: torch.where(x > 0, x, x.new_full(x.shape, float("inf"))),
    "fill_": lambda x: torch.minimum(x, torch.empty_like(x).fill_(float("inf"))),
    "NaN": lambda x: x * torch.full((4, 5), float("nan")),
    "a finite value (TVM's own)": lambda x: x + torch.full((4, 5), 2.5),
}


@pytest.mark.parametrize("name", list(NON_FINITE_FILLS))
def test_fills_of_infinity_and_nan_compile_as_in_pytorch(name: str) -> None:
    # TVM 0.27 imports these but its lowering of full fails ("PrimType is not iterable")
    f = NON_FINITE_FILLS[name]
    np.testing.assert_array_equal(imported_output(f, FLOATS), f(FLOATS).numpy())


COUNTING = {
    "down by one (relative positions)": lambda x: x + torch.arange(10, -10, -1),
    "down by three": lambda x: x + torch.arange(30, -30, -3),
    "down, as indices": lambda x: x[torch.arange(19, -1, -1)],
    "up (TVM's own)": lambda x: x + torch.arange(-5, 35, 2),
}


@pytest.mark.parametrize("name", list(COUNTING))
def test_arange_counts_as_in_pytorch(name: str) -> None:
    # TVM 0.27 sized an integer arange counting down with two numbers too many (64 made 66)
    f, x = COUNTING[name], torch.arange(20, dtype=torch.float32)
    np.testing.assert_array_equal(imported_output(f, x), f(x).numpy())
