"""Operators TVM 0.27's PyTorch importer has no converter for (the import stops), each written
here with relax's operators: ``torch.hypot``, ``torch.logcumsumexp``, ``F.rrelu`` in evaluation,
``aten._trilinear`` (``nn.Bilinear``), ``torch.triu_indices`` / ``tril_indices``, ``torch.cdist``,
``torch.var_mean``, ``prod`` along an axis, ``torch.searchsorted``, ``kthvalue``,
``torch.cummax`` / ``cummin``, ``torch.histc`` and ``nn.Embedding(max_norm=...)``'s renorm."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.errors import TclError
from tcl.integrations.tvm.aten import _arg, _out_dtype, _sizes, _static_size


def hypot(node: Any, importer: Any) -> Any:
    """``torch.hypot(a, b)``: ``sqrt(a * a + b * b)``."""
    from tvm import relax

    a, b = (importer.env[n] for n in node.args[:2])
    squares = relax.op.add(relax.op.multiply(a, a), relax.op.multiply(b, b))
    return importer.block_builder.emit(relax.op.sqrt(squares))


def logcumsumexp(node: Any, importer: Any) -> Any:
    """``torch.logcumsumexp(x, dim)``: element ``i`` the log-sum-exp of elements ``0..i``, each
    computed whole (an ``n x n`` lower triangle; a running sum in one pass would underflow where
    a later element dwarfs the earlier ones)."""
    import numpy as np
    from tvm import relax

    x = importer.env[node.args[0]]
    rank = len(importer.shape_of(x))
    dim = int(node.args[1]) % rank
    n = _static_size(importer, x, dim)
    if n is None:
        raise TclError("aten.logcumsumexp along a symbolic axis: tcl converts static shapes")
    dtype = str(x.ty.dtype)
    order = [a for a in range(rank) if a != dim] + [dim]
    last = relax.op.expand_dims(relax.op.permute_dims(x, order), rank - 1)  # (..., 1, n)
    later = np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf).astype(dtype)
    terms = relax.op.add(last, relax.const(later))  # (..., i, j): x_j where j <= i
    top = relax.op.max(terms, axis=[-1], keepdims=True)
    total = relax.op.sum(relax.op.exp(relax.op.subtract(terms, top)), axis=[-1], keepdims=True)
    out = relax.op.squeeze(relax.op.add(top, relax.op.log(total)), [-1])
    back = [order.index(a) for a in range(rank)]
    return importer.block_builder.emit(relax.op.permute_dims(out, back))


def rrelu(node: Any, importer: Any) -> Any:
    """``F.rrelu`` in evaluation (``aten.rrelu_with_noise_functional``): a leaky ReLU of slope
    ``(lower + upper) / 2``. Its noise output is the noise given."""
    from tvm import relax

    x, noise = importer.env[node.args[0]], importer.env[node.args[1]]
    lower = float(_arg(node, 2, "lower", 1.0 / 8))
    upper = float(_arg(node, 3, "upper", 1.0 / 3))
    if bool(_arg(node, 4, "training", False)):
        raise TclError(
            "aten.rrelu in training mode draws random slopes: export the model in eval()"
        )
    out = importer.block_builder.emit(relax.op.nn.leakyrelu(x, (lower + upper) / 2))
    return importer.block_builder.emit(relax.Tuple([out, noise]))


def trilinear(node: Any, importer: Any) -> Any:
    """``aten._trilinear(a, b, c, expand_a, expand_b, expand_c, sum_dims)`` (``nn.Bilinear``):
    each operand given size-1 axes at its ``expand`` positions, the three multiplied, the
    ``sum_dims`` summed away."""
    from tvm import relax

    product = None
    for operand, expand in zip(node.args[:3], node.args[3:6], strict=True):
        value = importer.env[operand]
        for axis in sorted(int(a) for a in expand):
            value = relax.op.expand_dims(value, axis)
        product = value if product is None else relax.op.multiply(product, value)
    sum_dims = [int(a) for a in node.args[6]]
    out = relax.op.sum(product, axis=sum_dims) if sum_dims else product
    return importer.block_builder.emit(out)


def _triangle_indices(numpy_indices: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """A converter of ``torch.triu_indices`` / ``torch.tril_indices(rows, cols, offset)``:
    constants, computed here (they take no tensor)."""

    def convert(node: Any, importer: Any) -> Any:
        import numpy as np
        from tvm import relax

        rows, cols = int(node.args[0]), int(node.args[1])
        offset = int(_arg(node, 2, "offset", 0))
        dtype = _out_dtype(node)
        pairs = np.stack(numpy_indices(rows, offset, cols)).astype(dtype)
        return relax.const(pairs.reshape(2, -1))

    return convert


def cdist(node: Any, importer: Any) -> Any:
    """``torch.cdist(a, b, p)`` (``aten._cdist_forward``): the p-norm of every row of ``a``
    against every row of ``b``, each difference computed (PyTorch's matrix-product shortcut for
    p = 2 on large inputs rounds differently by ~1e-6 of the squared norms)."""
    from tvm import relax

    a, b = importer.env[node.args[0]], importer.env[node.args[1]]
    p = float(node.args[2])
    rank = len(importer.shape_of(a))
    diff = relax.op.abs(
        relax.op.subtract(relax.op.expand_dims(a, rank - 1), relax.op.expand_dims(b, rank - 2))
    )  # (..., P, R, M)
    dtype = str(a.ty.dtype)
    if p == 0:
        out = relax.op.sum(
            relax.op.astype(relax.op.not_equal(diff, relax.const(0, dtype)), dtype), axis=[-1]
        )
    elif p == float("inf"):
        out = relax.op.max(diff, axis=[-1])
    elif p == 1:
        out = relax.op.sum(diff, axis=[-1])
    elif p == 2:
        out = relax.op.sqrt(relax.op.sum(relax.op.multiply(diff, diff), axis=[-1]))
    else:
        total = relax.op.sum(relax.op.power(diff, relax.const(p, dtype)), axis=[-1])
        out = relax.op.power(total, relax.const(1.0 / p, dtype))
    return importer.block_builder.emit(out)


def var_mean(node: Any, importer: Any) -> Any:
    """``torch.var_mean(x, dim, correction=1, keepdim=False)``: the variance with ``correction``
    subtracted from the count, and the mean."""
    from tvm import relax

    x = importer.env[node.args[0]]
    sizes = importer.shape_of(x)
    dims = _arg(node, 1, "dim", None)
    axes = [int(d) % len(sizes) for d in dims] if dims else list(range(len(sizes)))
    correction = node.kwargs.get("correction")
    correction = 1.0 if correction is None else float(correction)
    keepdim = bool(node.kwargs.get("keepdim", False))
    count = 1
    for axis in axes:
        count *= _static_size(importer, x, axis) or 0
    dtype = str(x.ty.dtype)
    mean = relax.op.mean(x, axis=axes, keepdims=True)
    squares = relax.op.sum(relax.op.square(relax.op.subtract(x, mean)), axis=axes, keepdims=keepdim)
    variance = relax.op.divide(squares, relax.const(max(count - correction, 0.0), dtype))
    mean = mean if keepdim else relax.op.squeeze(mean, axes)
    bb = importer.block_builder
    return bb.emit(relax.Tuple([bb.emit(variance), bb.emit(mean)]))


def prod_dim(node: Any, importer: Any) -> Any:
    """``x.prod(dim, keepdim=False)`` (``aten.prod.dim_int``)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    keepdim = bool(_arg(node, 2, "keepdim", False))
    out = relax.op.prod(x, axis=[int(node.args[1])], keepdims=keepdim)
    dtype = _out_dtype(node)
    return importer.block_builder.emit(
        out if str(x.ty.dtype) == dtype else relax.op.astype(out, dtype)
    )


def searchsorted(node: Any, importer: Any) -> Any:
    """``torch.searchsorted(boundaries, x, right=False)``: for each value, how many boundaries
    lie below it (at or below it with ``right`` or ``side="right"``); boundaries of one row, or
    one row per leading index of ``x``."""
    from tvm import relax

    boundaries, values = importer.env[node.args[0]], importer.env[node.args[1]]
    right = bool(node.kwargs.get("right", False)) or node.kwargs.get("side") == "right"
    if node.kwargs.get("sorter") is not None:
        raise TclError("aten.searchsorted with a sorter: sort the boundaries in the model")
    rank = len(importer.shape_of(boundaries))
    below = relax.op.less_equal if right else relax.op.less
    if rank == 1:
        compared = below(boundaries, relax.op.expand_dims(values, -1))
    else:  # (..., m) against (..., k): (..., k, m)
        compared = below(
            relax.op.expand_dims(boundaries, rank - 1), relax.op.expand_dims(values, -1)
        )
    dtype = "int32" if node.kwargs.get("out_int32", False) else "int64"
    count = relax.op.sum(relax.op.astype(compared, dtype), axis=[-1])
    return importer.block_builder.emit(count)


def kthvalue(node: Any, importer: Any) -> Any:
    """``x.kthvalue(k, dim=-1, keepdim=False)``: the k-th smallest along ``dim`` and where it
    was (a sort and one position of it)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    k = int(node.args[1])
    rank = len(importer.shape_of(x))
    dim = int(_arg(node, 2, "dim", -1)) % rank
    keepdim = bool(_arg(node, 3, "keepdim", False))
    order = relax.op.argsort(x, axis=dim)
    at = relax.op.strided_slice(order, [dim], [k - 1], [k])  # keeps the axis
    values = relax.op.gather_elements(x, at, dim)
    if not keepdim:
        values, at = relax.op.squeeze(values, [dim]), relax.op.squeeze(at, [dim])
    bb = importer.block_builder
    return bb.emit(relax.Tuple([bb.emit(values), bb.emit(relax.op.astype(at, "int64"))]))


def _running_extreme(largest: bool) -> Callable[[Any, Any], Any]:
    """A converter of ``torch.cummax`` / ``cummin(x, dim)``: element ``i`` the largest (smallest)
    of elements ``0..i`` and the last position it is at among them, as in PyTorch; each computed
    whole over an ``n x n`` lower triangle, as :func:`logcumsumexp`."""

    def convert(node: Any, importer: Any) -> Any:
        import numpy as np
        from tvm import relax

        x = importer.env[node.args[0]]
        name = f"aten.{node.target.__name__}"
        shape = _sizes(importer, x, name)
        rank, dtype = len(shape), str(x.ty.dtype)
        dim = int(node.args[1]) % rank
        n = shape[dim]
        order = [a for a in range(rank) if a != dim] + [dim]
        row = relax.op.expand_dims(relax.op.permute_dims(x, order), rank - 1)  # (..., 1, n)
        earlier = np.tril(np.ones((n, n), dtype=bool))
        if "float" in dtype:
            lowest, highest = -np.inf, np.inf
        else:
            lowest, highest = np.iinfo(dtype).min, np.iinfo(dtype).max
        padding = relax.const(lowest if largest else highest, dtype)  # never the extreme
        terms = relax.op.where(relax.const(earlier), row, padding)  # (..., i, j), j <= i
        extreme = relax.op.max if largest else relax.op.min
        values = extreme(terms, axis=[-1], keepdims=True)
        positions = relax.const(np.where(earlier, np.arange(n), -1), "int64")
        at = relax.op.where(relax.op.equal(terms, values), positions, relax.const(-1, "int64"))
        back = [order.index(a) for a in range(rank)]
        bb = importer.block_builder
        values = bb.emit(relax.op.permute_dims(relax.op.squeeze(values, [-1]), back))
        indices = bb.emit(relax.op.permute_dims(relax.op.max(at, axis=[-1]), back))
        return bb.emit(relax.Tuple([values, indices]))

    return convert


def histc(node: Any, importer: Any) -> Any:
    """``torch.histc(x, bins, min, max)``: how many elements fall in each of ``bins`` equal
    bins over ``[min, max]`` (the last bin closed), elements outside ignored; ``min == max``
    takes the data's own range, as in PyTorch."""
    import numpy as np
    from tvm import relax

    x = importer.env[node.args[0]]
    dtype = str(x.ty.dtype)
    bins = int(_arg(node, 1, "bins", 100))
    low, high = float(_arg(node, 2, "min", 0)), float(_arg(node, 3, "max", 0))
    flat = relax.op.reshape(x, [-1])
    lo, hi = relax.const(low, dtype), relax.const(high, dtype)
    if low == high:
        lo, hi = relax.op.min(flat), relax.op.max(flat)
        same = relax.op.equal(lo, hi)  # PyTorch widens a single value's range by one
        lo = relax.op.where(same, relax.op.subtract(lo, relax.const(1.0, dtype)), lo)
        hi = relax.op.where(same, relax.op.add(hi, relax.const(1.0, dtype)), hi)
    scaled = relax.op.divide(
        relax.op.multiply(relax.op.subtract(flat, lo), relax.const(float(bins), dtype)),
        relax.op.subtract(hi, lo),
    )
    index = relax.op.minimum(
        relax.op.astype(relax.op.floor(scaled), "int64"), relax.const(bins - 1, "int64")
    )
    inside = relax.op.logical_and(relax.op.greater_equal(flat, lo), relax.op.less_equal(flat, hi))
    index = relax.op.where(inside, index, relax.const(-1, "int64"))  # outside: no bin
    hits = relax.op.equal(relax.op.expand_dims(index, 1), relax.const(np.arange(bins), "int64"))
    return importer.block_builder.emit(relax.op.sum(relax.op.astype(hits, dtype), axis=[0]))


def embedding_renorm(node: Any, importer: Any) -> Any:
    """``aten.embedding_renorm`` (``nn.Embedding(max_norm=...)``): the weight with each row
    that ``indices`` looks up scaled to ``max_norm`` where its ``norm_type``-norm exceeds it,
    by ``max_norm / (norm + 1e-7)`` as PyTorch does; the other rows as they are."""
    from tvm import relax

    weight, indices = importer.env[node.args[0]], importer.env[node.args[1]]
    max_norm, p = float(node.args[2]), float(node.args[3])
    dtype = str(weight.ty.dtype)
    rows = _sizes(importer, weight, "aten.embedding_renorm")[0]
    if p == 2.0:
        norm = relax.op.sqrt(
            relax.op.sum(relax.op.multiply(weight, weight), axis=[1], keepdims=True)
        )
    else:
        powered = relax.op.power(relax.op.abs(weight), relax.const(p, dtype))
        norm = relax.op.power(
            relax.op.sum(powered, axis=[1], keepdims=True), relax.const(1 / p, dtype)
        )
    scale = relax.op.divide(
        relax.const(max_norm, dtype), relax.op.add(norm, relax.const(1e-7, dtype))
    )
    flat = relax.op.astype(relax.op.reshape(indices, [-1]), "int64")
    looked_up = relax.op.scatter_elements(
        relax.op.zeros([rows], "bool"), flat, relax.op.ones_like(flat, "bool")
    )
    renormed = relax.op.logical_and(
        relax.op.expand_dims(looked_up, 1), relax.op.greater(norm, relax.const(max_norm, dtype))
    )
    out = relax.op.where(renormed, relax.op.multiply(weight, scale), weight)
    return importer.block_builder.emit(out)


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The converters of this module, by operator name."""
    import numpy as np

    return {
        "hypot.default": hypot,
        "logcumsumexp.default": logcumsumexp,
        "rrelu_with_noise_functional.default": rrelu,
        "_trilinear.default": trilinear,
        "triu_indices.default": _triangle_indices(np.triu_indices),
        "tril_indices.default": _triangle_indices(np.tril_indices),
        "_cdist_forward.default": cdist,
        "var_mean.correction": var_mean,
        "prod.dim_int": prod_dim,
        "searchsorted.Tensor": searchsorted,
        "kthvalue.default": kthvalue,
        "cummax.default": _running_extreme(largest=True),
        "cummin.default": _running_extreme(largest=False),
        "histc.default": histc,
        "embedding_renorm.default": embedding_renorm,
    }
