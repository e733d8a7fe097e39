"""Writes into a tensor at indices (scatters), converted where TVM 0.27's PyTorch importer has no
converter or a wrong one: the message passing of graph networks (``scatter_add``,
``scatter_reduce``, ``index_add``), assignment through index tensors (``y[i] = v``, ``index_put``
with fewer index tensors than axes) and ``nn.EmbeddingBag``.

Each is one of relax's ``scatter_elements`` or ``index_put`` with every axis indexed, so each
axis's index is built here and broadcast to the shape PyTorch's indexing gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tcl.errors import TclError
from tcl.integrations.tvm.aten import _arg, _emit, _sizes


def _wrapped(importer: Any, index: Any, size: int) -> Any:
    """``index`` with negative entries counted from the end of an axis of ``size``, as int64."""
    from tvm import relax

    index = _emit(importer, relax.op.astype(index, "int64"))
    negative = relax.op.less(index, relax.const(0, "int64"))
    return _emit(
        importer, relax.op.where(negative, relax.op.add(index, relax.const(size, "int64")), index)
    )


def _full_indices(
    importer: Any, sizes: list[int], indices: list[Any]
) -> tuple[list[Any], list[int]]:
    """One int64 index per axis of a tensor of ``sizes``, all of one shape, for the index tensors
    ``indices`` (None or missing: the whole axis), and that shape: PyTorch's advanced indexing,
    whose broadcast index axes stand where the indexed axes were when those are adjacent, else
    first."""
    from tvm import relax

    indices = list(indices) + [None] * (len(sizes) - len(indices))
    indexed = [axis for axis, index in enumerate(indices) if index is not None]
    tensors = [_wrapped(importer, indices[axis], sizes[axis]) for axis in indexed]
    broadcast = [int(s) for s in importer.shape_of(tensors[0])]
    for t in tensors[1:]:
        shape = [int(s) for s in importer.shape_of(t)]
        rank = max(len(broadcast), len(shape))
        broadcast = [
            max(a, b)
            for a, b in zip(
                [1] * (rank - len(broadcast)) + broadcast,
                [1] * (rank - len(shape)) + shape,
                strict=True,
            )
        ]
    adjacent = indexed == list(range(indexed[0], indexed[-1] + 1))
    start = indexed[0] if adjacent else 0
    rest = [axis for axis in range(len(sizes)) if axis not in indexed]
    before = [axis for axis in rest if adjacent and axis < start]
    after = [axis for axis in rest if axis not in before]
    shape = [sizes[a] for a in before] + broadcast + [sizes[a] for a in after]
    out = []
    for axis in range(len(sizes)):
        if axis in indexed:
            index = tensors[indexed.index(axis)]
            rank = len(importer.shape_of(index))
            lead = len(before) + len(broadcast) - rank
            layout = [1] * lead + [int(s) for s in importer.shape_of(index)] + [1] * len(after)
        else:
            index = relax.op.arange(0, sizes[axis], 1, "int64")
            layout = [1] * len(shape)
            position = (
                before.index(axis)
                if axis in before
                else len(before) + len(broadcast) + after.index(axis)
            )
            layout[position] = sizes[axis]
        reshaped = relax.op.reshape(index, layout)
        out.append(_emit(importer, relax.op.broadcast_to(reshaped, shape)))
    return out, shape


def _index_put_values(
    importer: Any, x: Any, indices: list[Any], values: Any, accumulate: bool
) -> Any:
    """``x`` with ``values`` put (or added, ``accumulate``) at ``indices`` (PyTorch's list of
    index tensors and Nones)."""
    from tvm import relax

    sizes = _sizes(importer, x, "index_put")
    full, shape = _full_indices(importer, sizes, indices)
    count = math.prod(shape)
    # flat, one position per element written (relax's index_put logs its broadcasting)
    flat = [_emit(importer, relax.op.reshape(index, [count])) for index in full]
    values = relax.op.broadcast_to(relax.op.astype(values, str(x.ty.dtype)), shape)
    values = _emit(importer, relax.op.reshape(values, [count]))
    return _emit(importer, relax.op.index_put(x, relax.Tuple(flat), values, accumulate))


def index_put(node: Any, importer: Any) -> Any:
    """``aten.index_put(x, indices, values, accumulate)`` and its in-place twin, with any number
    of index tensors (TVM's converter needs one for every axis)."""
    from tvm import relax

    x, indices, values = importer.retrieve_args(node)[:3]
    if not isinstance(values, relax.Expr):  # a number
        values = relax.const(values, str(x.ty.dtype))
    out = _index_put_values(importer, x, indices, values, bool(_arg(node, 3, "accumulate", False)))
    if str(node.target).startswith("aten.index_put_"):
        for env_node, expr in list(importer.env.items()):  # in place: its aliases see the write
            if expr is x:
                importer.env[env_node] = out
    return out


def index_add(node: Any, importer: Any) -> Any:
    """``x.index_add(dim, index, source, alpha=1)``: ``source`` times ``alpha`` added at
    ``index`` along ``dim``, repeated indices adding up."""
    from tvm import relax

    x = importer.env[node.args[0]]
    dim = int(node.args[1]) % len(importer.shape_of(x))
    source = importer.env[node.args[3]]
    alpha = _arg(node, 4, "alpha", 1)
    if alpha != 1:
        source = _emit(importer, relax.op.multiply(source, relax.const(alpha, str(x.ty.dtype))))
    indices = [None] * dim + [importer.env[node.args[2]]]
    # one index tensor at ``dim``: its axis stands there, as ``source``'s does
    return _index_put_values(importer, x, indices, source, accumulate=True)


def _scatter_operands(node: Any, importer: Any) -> tuple[Any, int, Any, Any]:
    """``(x, dim, index, src)`` of a scatter, ``src`` cut to ``index``'s shape (PyTorch reads
    only that corner of it; relax wants the two shapes equal)."""
    from tvm import relax

    x, index, src = (importer.env[node.args[k]] for k in (0, 2, 3))
    dim = int(node.args[1]) % len(importer.shape_of(x))
    shape = _sizes(importer, index, "scatter")
    if _sizes(importer, src, "scatter") != shape:
        src = _emit(
            importer,
            relax.op.strided_slice(src, list(range(len(shape))), [0] * len(shape), shape),
        )
    index = _emit(importer, relax.op.astype(index, "int64"))
    return x, dim, index, src


def scatter_add(node: Any, importer: Any) -> Any:
    """``x.scatter_add(dim, index, src)``: relax's ``scatter_elements`` adding."""
    from tvm import relax

    x, dim, index, src = _scatter_operands(node, importer)
    return _emit(importer, relax.op.scatter_elements(x, index, src, dim, "add"))


# scatter_reduce's reductions: relax's name, and the value that leaves a reduction unchanged
_REDUCTIONS = {
    "sum": ("add", 0.0),
    "prod": ("mul", 1.0),
    "amax": ("max", None),
    "amin": ("min", None),
}


def scatter_reduce(node: Any, importer: Any) -> Any:
    """``x.scatter_reduce(dim, index, src, reduce, include_self=True)``, ``reduce`` one of sum,
    prod, mean, amax, amin. Without ``include_self`` the written positions start from the
    reduction's identity; a mean divides by how many values each position got."""
    import numpy as np
    from tvm import relax

    x, dim, index, src = _scatter_operands(node, importer)
    reduce, include_self = str(node.args[4]), bool(_arg(node, 5, "include_self", True))
    dtype = str(x.ty.dtype)
    if reduce not in (*_REDUCTIONS, "mean"):
        raise TclError(f"aten.scatter_reduce with reduce={reduce!r}: not a PyTorch reduction")
    sizes = _sizes(importer, index, "scatter_reduce")

    def scattered(data: Any, updates: Any, how: str) -> Any:
        return _emit(importer, relax.op.scatter_elements(data, index, updates, dim, how))

    if reduce == "mean":
        ones = relax.op.ones(sizes, dtype)
        start = x if include_self else scattered(x, relax.op.zeros(sizes, dtype), "update")
        total = scattered(start, src, "add")
        counted = relax.op.ones_like(x) if include_self else relax.op.zeros_like(x)
        count = scattered(_emit(importer, counted), ones, "add")
        count = relax.op.maximum(count, relax.const(1, dtype))
        divide = relax.op.divide if dtype.startswith("float") else relax.op.floor_divide
        return _emit(importer, divide(total, count))
    how, identity = _REDUCTIONS[reduce]
    if not include_self:
        if identity is None and dtype.startswith("float"):
            identity = float("-inf") if reduce == "amax" else float("inf")
        elif identity is None:
            identity = np.iinfo(dtype).min if reduce == "amax" else np.iinfo(dtype).max
        fill = relax.op.broadcast_to(relax.const(identity, dtype), sizes)
        x = scattered(x, fill, "update")
    return scattered(x, src, how)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _bag_of_each(importer: Any, offsets: Any, n: int, bags: int) -> Any:
    """The bag of each of ``n`` entries: how many of the bag starts ``offsets[1:bags]`` are at
    or before it (a mark at each start, summed cumulatively; repeated starts are empty bags)."""
    from tvm import relax

    later_starts = relax.op.strided_slice(offsets, [0], [1], [max(bags, 1)])
    later_starts = relax.op.minimum(relax.op.astype(later_starts, "int64"), relax.const(n, "int64"))
    marks = relax.op.scatter_elements(
        relax.op.zeros([n + 1], "int64"),
        later_starts,
        relax.op.ones([max(bags - 1, 0)], "int64"),
        0,
        "add",
    )
    return _emit(importer, relax.op.strided_slice(relax.op.cumsum(marks, 0), [0], [0], [n]))


def embedding_bag(node: Any, importer: Any) -> Any:
    """``nn.EmbeddingBag`` (``aten._embedding_bag``, and its ``_forward_only`` twin): the rows
    of ``weight`` at ``indices``, summed, averaged or maxed over each bag, bag ``b`` holding
    the entries from ``offsets[b]`` to the next offset; an empty bag is zeros. The other three
    outputs (which bag each entry is in, the bags' sizes, the max's rows) are refused where the
    network reads them."""
    from tvm import relax

    weight, indices, offsets = (importer.env[node.args[k]] for k in range(3))
    mode = _BAG_MODES[int(_arg(node, 4, "mode", 0))]
    per_sample = _arg(node, 6, "per_sample_weights", None)
    include_last = bool(_arg(node, 7, "include_last_offset", False))
    padding_idx = int(_arg(node, 8, "padding_idx", -1) or -1)
    if any(user.args[1] != 0 for user in node.users):
        raise TclError("aten._embedding_bag: the network reads outputs besides the bags' values")
    (n,) = _sizes(importer, indices, "embedding_bag")
    (starts,) = _sizes(importer, offsets, "embedding_bag")
    bags = starts - 1 if include_last else starts
    _, width = _sizes(importer, weight, "embedding_bag")
    dtype = str(weight.ty.dtype)
    indices = _emit(importer, relax.op.astype(indices, "int64"))
    bag = _bag_of_each(importer, offsets, n, bags)
    values = relax.op.take(weight, indices, 0)
    if per_sample is not None:
        scale = relax.op.reshape(importer.env[per_sample], [n, 1])
        values = relax.op.multiply(values, relax.op.astype(scale, dtype))
    kept = relax.op.ones([n], dtype)
    if padding_idx >= 0:  # entries of the padding row count for nothing, not even a mean's size
        kept = relax.op.astype(
            relax.op.not_equal(indices, relax.const(padding_idx, "int64")), dtype
        )
        values = relax.op.multiply(values, relax.op.reshape(kept, [n, 1]))
    kept = _emit(importer, kept)
    spread = _emit(importer, relax.op.broadcast_to(relax.op.reshape(bag, [n, 1]), [n, width]))
    count = _emit(
        importer, relax.op.scatter_elements(relax.op.zeros([bags], dtype), bag, kept, 0, "add")
    )
    if mode == "max":
        start = relax.op.broadcast_to(relax.const(float("-inf"), dtype), [bags, width])
        if padding_idx >= 0:
            values = relax.op.where(
                relax.op.greater(relax.op.reshape(kept, [n, 1]), relax.const(0, dtype)),
                values,
                relax.const(float("-inf"), dtype),
            )
        out = relax.op.scatter_elements(start, spread, values, 0, "max")
        empty = relax.op.equal(relax.op.reshape(count, [bags, 1]), relax.const(0, dtype))
        out = relax.op.where(empty, relax.const(0, dtype), out)
    else:
        out = relax.op.scatter_elements(
            relax.op.zeros([bags, width], dtype), spread, values, 0, "add"
        )
        if mode == "mean":
            size = relax.op.maximum(relax.op.reshape(count, [bags, 1]), relax.const(1, dtype))
            out = relax.op.divide(out, size)
    out = _emit(importer, out)
    return _emit(importer, relax.Tuple([out, bag, count, bag]))  # (values, unread outputs)


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The converters of this module, by operator name."""
    return {
        "index_put.default": index_put,
        "index_put_.default": index_put,
        "index_add.default": index_add,
        "scatter_add.default": scatter_add,
        "scatter_reduce.two": scatter_reduce,
        "_embedding_bag.default": embedding_bag,
        "_embedding_bag_forward_only.default": embedding_bag,
    }
