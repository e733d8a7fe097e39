"""Scatters, assignments through index tensors and nn.EmbeddingBag compute what PyTorch computes
(TVM 0.27's importer has no converter for most of them, and needs an index for every axis)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tcl.errors import TclError
from tcl.zoo.extract import export_program, import_program

from conftest import applying, imported_output

SOURCE = torch.randn(6, 5, generator=torch.Generator().manual_seed(0))
INDEX = torch.tensor([0, 2, 1, 0, 5, 2])  # repeats: the writes to one position add up
ROWS = (INDEX % 4).view(6, 1).expand(6, 5)


def assigned(f):
    """``f`` applied to a copy of a tensor, the copy returned (``y[...] = v`` written as code)."""

    def apply(t: torch.Tensor, *rest: torch.Tensor) -> torch.Tensor:
        y = t.clone()
        f(y, *rest)
        return y

    return apply


SCATTERS = {
    "scatter_add": lambda v, i: torch.zeros(4, 5).scatter_add(
        0, (i % 4).view(6, 1).expand(6, 5), v
    ),
    "scatter_add, an index smaller than the source": lambda v, i: torch.zeros(4, 6).scatter_add(
        1, (i % 6).view(2, 3), v
    ),
    "scatter_reduce sum": lambda v, i: torch.ones(4, 5).scatter_reduce(0, ROWS, v, "sum"),
    "scatter_reduce prod, without self": lambda v, i: torch.full((4, 5), 3.0).scatter_reduce(
        0, ROWS, v, "prod", include_self=False
    ),
    "scatter_reduce amax, without self": lambda v, i: torch.zeros(4, 5).scatter_reduce(
        0, ROWS, v, "amax", include_self=False
    ),
    "scatter_reduce amin": lambda v, i: torch.zeros(4, 5).scatter_reduce(0, ROWS, v, "amin"),
    "scatter_reduce mean": lambda v, i: torch.ones(4, 5).scatter_reduce(0, ROWS, v, "mean"),
    "scatter_reduce mean, without self": lambda v, i: torch.full((4, 5), 3.0).scatter_reduce(
        0, ROWS, v, "mean", include_self=False
    ),
    "index_add": lambda v, i: torch.zeros(7, 5).index_add(0, i, v),
    "index_add along axis 1, alpha": lambda v, i: torch.ones(5, 7).index_add(
        1, i, v.t(), alpha=2.5
    ),
    "index_put, accumulating": lambda v, i: torch.zeros(7, 5).index_put((i,), v, accumulate=True),
    "y[i] = row": assigned(lambda y, i: y.__setitem__(i[:2], torch.zeros(5))),
    "y[i - 6] = 1 (negative indices)": assigned(lambda y, i: y.__setitem__(i - 6, 1.0)),
    "y[:, [1, 4]] = 1": assigned(lambda y, i: y.__setitem__((slice(None), [1, 4]), 1.0)),
}


@pytest.mark.parametrize("name", list(SCATTERS))
def test_scatters_write_where_pytorch_writes(name: str) -> None:
    f = SCATTERS[name]
    expected = f(SOURCE, INDEX).numpy()
    np.testing.assert_allclose(imported_output(f, SOURCE, INDEX), expected, rtol=1e-6, atol=1e-6)


CUBE = torch.randn(6, 4, 6, generator=torch.Generator().manual_seed(1))
INDEXED_AXES = {
    "first and last axes (not adjacent: theirs first)": lambda y, i: y.__setitem__(
        (i[:2], slice(None), i[2:4]), torch.ones(2, 4)
    ),
    "the last two axes": lambda y, i: y.__setitem__(
        (slice(None), i[:2] % 4, i[2:4]), torch.ones(6, 2)
    ),
    "two-dimensional index": lambda y, i: y.__setitem__(i.view(2, 3), torch.ones(2, 3, 4, 6)),
}


@pytest.mark.parametrize("name", list(INDEXED_AXES))
def test_assignment_through_index_tensors_on_any_axes(name: str) -> None:
    f = assigned(INDEXED_AXES[name])
    np.testing.assert_array_equal(imported_output(f, CUBE, INDEX), f(CUBE, INDEX).numpy())


WEIGHT = torch.randn(10, 4, generator=torch.Generator().manual_seed(2))
IDS = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
OFFSETS = torch.tensor([0, 3, 3, 6])  # the second bag is empty
BAGS = {
    "sum": lambda i, o: F.embedding_bag(i, WEIGHT, o, mode="sum"),
    "mean": lambda i, o: F.embedding_bag(i, WEIGHT, o, mode="mean"),
    "max": lambda i, o: F.embedding_bag(i, WEIGHT, o, mode="max"),
    "mean, padding row": lambda i, o: F.embedding_bag(i, WEIGHT, o, mode="mean", padding_idx=4),
    "max, padding row": lambda i, o: F.embedding_bag(i, WEIGHT, o, mode="max", padding_idx=4),
    "sum, weighted, last offset included": lambda i, o: F.embedding_bag(
        i,
        WEIGHT,
        torch.cat([o, torch.tensor([8])]),
        mode="sum",
        include_last_offset=True,
        per_sample_weights=torch.linspace(0.1, 2.0, 8),
    ),
    "nn.EmbeddingBag on a batch of sequences": lambda i, o: F.embedding_bag(i.view(2, 4), WEIGHT),
}


@pytest.mark.parametrize("name", list(BAGS))
def test_embedding_bags_reduce_as_in_pytorch(name: str) -> None:
    f = BAGS[name]
    expected = f(IDS, OFFSETS).numpy()
    np.testing.assert_allclose(imported_output(f, IDS, OFFSETS), expected, rtol=1e-6, atol=1e-6)


def test_an_embedding_bag_output_tcl_does_not_compute_is_refused() -> None:
    bag_of_each = applying(lambda i, o: torch.ops.aten._embedding_bag(WEIGHT, i, o)[1].float())
    with pytest.raises(TclError, match="reads outputs besides the bags' values"):
        import_program(export_program(bag_of_each, (IDS, OFFSETS)))
