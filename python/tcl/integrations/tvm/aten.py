"""ATen operators that TVM 0.27's PyTorch importer (``from_exported_program``) converts wrongly
or not at all, converted here instead.

- ``aten.select.int`` with a negative index (``x[:, -1]``, the last token of a sequence) becomes
  ``take(x, -1)``, whose default "fast" mode reads out of bounds: garbage or a crash, silently.
- ``aten.index.Tensor`` with negative entries in an index tensor (``x[:, [-1, 0]]``): the same.
- ``x[:, i, j]``, several index tensors after a slice, keeps an axis too many.
- ``torch.full`` / ``full_like`` / ``fill_`` with an infinite or NaN value (the mask of
  ``nn.Transformer.generate_square_subsequent_mask``) import, but TVM's lowering of them fails
  (a dtype object where it expects a string).
- ``torch.arange(start, end, step)`` of integers with a negative step has too many elements
  (``arange(32, -32, -1)``: 66).
- ``aten.amax`` / ``aten.amin`` and ``aten.adaptive_max_pool{1,2,3}d`` have no converter, so the
  import stops.

Other operators TVM lacks are in :mod:`tcl.integrations.tvm.numerics` and
:mod:`tcl.integrations.tvm.elementwise`, scatters and
``nn.EmbeddingBag`` in :mod:`tcl.integrations.tvm.scatter`, sliding windows
and resampling in :mod:`tcl.integrations.tvm.windows`, group and instance normalization in
:mod:`tcl.integrations.tvm.norms`, dtype promotion in
:mod:`tcl.integrations.tvm.promotion`. :func:`converters` gathers them for the importer's
``custom_convert_map``; a converter gets the FX node and the importer. :func:`decomposed`
decomposes the exported program as TVM's importer would, but for the operators converted whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.errors import TclError


def _static_size(importer: Any, x: Any, dim: int) -> int | None:
    """The size of ``x``'s axis ``dim`` when it is a number, else None (a symbolic size)."""
    from tvm import tirx

    size = importer.shape_of(x)[dim]
    if isinstance(size, int):
        return size
    return int(size.value) if isinstance(size, tirx.IntImm) else None


def _sizes(importer: Any, x: Any, what: str) -> list[int]:
    """The sizes of ``x``'s axes (:func:`_static_size`); a symbolic size is refused, in one line
    naming ``what`` (tcl tunes static shapes)."""
    sizes = [_static_size(importer, x, axis) for axis in range(len(importer.shape_of(x)))]
    if any(size is None for size in sizes):
        raise TclError(f"{what} on a tensor of symbolic shape: tcl converts static shapes")
    return sizes  # type: ignore[return-value]


def _arg(node: Any, position: int, name: str, default: Any) -> Any:
    """Argument ``name`` of ``node``, given by position or keyword, else ``default``."""
    if len(node.args) > position:
        return node.args[position]
    return node.kwargs.get(name, default)


def _out_dtype(node: Any) -> str:
    """The dtype of ``node``'s output, as relax names it (``float32``)."""
    return str(node.meta["val"].dtype).removeprefix("torch.")


def _emit(importer: Any, expr: Any) -> Any:
    return importer.block_builder.emit(expr)


def tvm_converter(importer: Any, name: str) -> Callable[[Any], Any]:
    """TVM's own converter of operator ``name``, bound to ``importer`` (the custom map replaced it
    in the importer's map): what a converter here hands a node to where TVM's is right."""
    if not hasattr(importer, "_tcl_tvm_converters"):
        importer._tcl_tvm_converters = type(importer).create_convert_map(importer)
    return importer._tcl_tvm_converters[name]  # type: ignore[no-any-return]


def in_dtype(importer: Any, value: Any, dtype: str) -> Any:
    """``value`` (a relax tensor) cast to ``dtype``, or itself where it has that dtype already."""
    from tvm import relax

    if str(value.ty.dtype) == dtype:
        return value
    return importer.block_builder.emit(relax.op.astype(value, dtype))


def select(node: Any, importer: Any) -> Any:
    """``x.select(dim, index)``: a negative index counts from the end, as in PyTorch."""
    from tvm import relax

    x = importer.env[node.args[0]]
    dim, index = int(node.args[1]), int(node.args[2])
    size = _static_size(importer, x, dim)
    if index < 0 and size is not None:  # tcl tunes static shapes; a symbolic axis stays TVM's
        index += size
    return importer.block_builder.emit(relax.op.take(x, relax.const(index, "int64"), dim))


def index_tensor(node: Any, importer: Any) -> Any:
    """``x[i0, i1, ...]`` with index tensors (``aten.index.Tensor``): negative entries count from
    the end of their axis, as in PyTorch (a constant index folds to its wrapped values). TVM's
    own converter then does the indexing."""
    from tvm import relax

    x = importer.env[node.args[0]]
    indexed = [axis for axis, index in enumerate(node.args[1]) if index is not None]
    if len(indexed) > 1 and indexed != list(range(len(indexed))):
        return _gathered(node, importer)
    saved = {}
    for axis, index_node in enumerate(node.args[1]):
        size = None if index_node is None else _static_size(importer, x, axis)
        if size is None:
            continue
        index = importer.env[index_node]
        dtype = str(index.ty.dtype)
        if not dtype.startswith("int"):  # a boolean mask has no negative entries
            continue
        negative = relax.op.less(index, relax.const(0, dtype))
        wrapped = relax.op.where(negative, relax.op.add(index, relax.const(size, dtype)), index)
        saved[index_node] = index
        importer.env[index_node] = importer.block_builder.emit(wrapped)
    try:
        return tvm_converter(importer, "index.Tensor")(node)
    finally:
        importer.env.update(saved)  # the index tensors' other users see them unchanged


def _gathered(node: Any, importer: Any) -> Any:
    """``x[..., i, ..., j]``: several index tensors, not on the first axes alone, where TVM's
    converter gives a wrong shape (``x[:, i, j]`` keeps an axis too many). Each element's flat
    position in ``x``, from every axis's index (:func:`scatter._full_indices`), is taken."""
    from tvm import relax

    from tcl.integrations.tvm.scatter import _full_indices

    x = importer.env[node.args[0]]
    indices = [None if i is None else importer.env[i] for i in node.args[1]]
    if any(not str(i.ty.dtype).startswith("int") for i in indices if i is not None):
        return tvm_converter(importer, "index.Tensor")(node)  # a boolean mask
    sizes = _sizes(importer, x, "indexing")
    full, _ = _full_indices(importer, sizes, indices)
    flat, stride = None, 1
    for axis in reversed(range(len(sizes))):
        term = relax.op.multiply(full[axis], relax.const(stride, "int64"))
        flat = term if flat is None else relax.op.add(flat, term)
        stride *= sizes[axis]
    elements = relax.op.reshape(x, [stride])
    return importer.block_builder.emit(relax.op.take(elements, flat, 0))


def _reduction(op: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """A converter of ``aten.amax`` / ``aten.amin``: (x, dim=[], keepdim=False), where no dims
    reduces every axis."""

    def convert(node: Any, importer: Any) -> Any:
        x = importer.env[node.args[0]]
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", [])
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        axis = list(dims) if dims else None
        return importer.block_builder.emit(op(x, axis=axis, keepdims=bool(keepdim)))

    return convert


def _adaptive_max_pool(dims: int) -> Callable[[Any, Any], Any]:
    """A converter of ``aten.adaptive_max_pool{1,2,3}d``. Where each output size divides the
    input's (global max pooling among them), a max pool whose window and stride are the
    quotient; elsewhere PyTorch's windows, output ``i`` of ``n`` over an axis of ``size`` taking
    ``floor(i * size / n)`` up to ``ceil((i + 1) * size / n)``, one axis at a time (a maximum over
    a box is the maximum over each axis in turn). Its indices output is refused where the
    network reads it."""

    def convert(node: Any, importer: Any) -> Any:
        from tvm import relax

        x = importer.env[node.args[0]]
        name = f"aten.{node.target.__name__}"
        shape = _sizes(importer, x, name)
        sizes, wanted = shape[-dims:], [int(s) for s in node.args[1]]
        if any(user.args[1] != 0 for user in node.users):
            raise TclError(f"{name}: the network reads the pooling's indices, which tcl cannot")
        bb = importer.block_builder
        if len(shape) == dims + 2 and all(s % w == 0 for s, w in zip(sizes, wanted, strict=True)):
            window = [s // w for s, w in zip(sizes, wanted, strict=True)]
            pool = getattr(relax.op.nn, f"max_pool{dims}d")
            out = bb.emit(pool(x, pool_size=window, strides=window))
        else:
            out = x
            axes = range(len(shape) - dims, len(shape))
            for axis, size, n in zip(axes, sizes, wanted, strict=True):
                windows = [(i * size // n, -(-(i + 1) * size // n)) for i in range(n)]
                maxima = [
                    relax.op.max(relax.op.strided_slice(out, [axis], [a], [b]), [axis], True)
                    for a, b in windows
                ]
                out = bb.emit(relax.op.concat(maxima, axis=axis))
        return bb.emit(relax.Tuple([out, out]))  # (values, unread indices)

    return convert


def _nearest_sources(size_in: int, size_out: int, scale: float | None) -> Any:
    """The source index of each output index along one axis, as PyTorch's nearest upsampling
    computes it: ``min(floor(dst * s), size_in - 1)`` in float32, ``s`` the inverse of the scale
    factor where one was given, else ``size_in / size_out`` (the same size, or twice it, are
    copied and halved whatever the scale)."""
    import numpy as np

    dst = np.arange(size_out, dtype=np.int64)
    if size_out == size_in:  # PyTorch's two shortcuts, whatever the scale factor
        return dst
    if size_out == 2 * size_in:
        return dst >> 1
    ratio = np.float32(1.0 / scale if scale else size_in / size_out)
    sources = np.floor(dst.astype(np.float32) * ratio).astype(np.int64)
    return np.minimum(sources, size_in - 1)


def upsample_nearest2d(node: Any, importer: Any) -> Any:
    """``F.interpolate(x, mode="nearest")`` (``aten.upsample_nearest2d.vec``). TVM's converter
    rounds from half-pixel centres: right where each size is a whole multiple of the input's
    (there it stays, and so do the tasks it makes), other pixels than PyTorch's elsewhere (32 to
    40 pixels, 40 to 32). There it is a gather of the rows and columns PyTorch picks."""
    from tvm import relax

    x = importer.env[node.args[0]]
    scales = node.args[2] if len(node.args) > 2 and node.args[2] else [None, None]
    axes = []
    for i, scale in enumerate(scales):
        size_in = _static_size(importer, x, 2 + i)
        if size_in is None:  # a symbolic axis: TVM's own converter
            return tvm_converter(importer, "upsample_nearest2d.vec")(node)
        size_out = int(node.args[1][i]) if node.args[1] else int(size_in * scale)
        axes.append((size_in, size_out, scale))
    if all(o % i == 0 and s in (None, o // i) for i, o, s in axes):
        return tvm_converter(importer, "upsample_nearest2d.vec")(node)
    for axis, (size_in, size_out, scale) in enumerate(axes, start=2):
        sources = relax.const(_nearest_sources(size_in, size_out, scale))
        x = importer.block_builder.emit(relax.op.take(x, sources, axis))
    return x


def elu(node: Any, importer: Any) -> Any:
    """``aten.elu(x, alpha, scale, input_scale)``: ``scale * x`` above 0, ``scale * alpha *
    (exp(input_scale * x) - 1)`` below. SELU decomposes into it with ``scale`` 1.0507, which
    TVM's converter drops."""
    from tvm import relax

    x = importer.env[node.args[0]]
    alpha, scale, input_scale = (
        float(node.args[k]) if len(node.args) > k else node.kwargs.get(key, 1.0)
        for k, key in ((1, "alpha"), (2, "scale"), (3, "input_scale"))
    )
    dtype = str(x.ty.dtype)

    def const(value: float) -> Any:
        return relax.const(value, dtype)

    below = relax.op.multiply(
        const(alpha),
        relax.op.subtract(relax.op.exp(relax.op.multiply(x, const(input_scale))), const(1.0)),
    )
    positive = relax.op.greater(x, const(0.0))
    return importer.block_builder.emit(
        relax.op.multiply(const(scale), relax.op.where(positive, x, below))
    )


# Operators whose core-ATen decompositions TVM's converters get wrong, converted whole instead
KEPT_WHOLE = (
    "im2col.default",
    "col2im.default",
    "upsample_linear1d.vec",
    "upsample_linear1d.default",
    "upsample_trilinear3d.vec",
)


def decomposed(exported: Any) -> Any:
    """``exported`` decomposed into core ATen as TVM's importer does it, but for
    :data:`KEPT_WHOLE`: ``F.unfold`` and ``F.fold`` become index operations that TVM's
    converters cannot broadcast, linear and trilinear resampling arithmetic that TVM cannot
    compile."""
    import torch

    buffers = (*exported.named_buffers(), *exported.named_parameters())
    if any(getattr(t, "is_sparse", False) for _, t in buffers):
        return exported  # TVM leaves a program with sparse weights as it is
    table = torch.export.default_decompositions()
    for name in KEPT_WHOLE:
        op, overload = name.split(".")
        table.pop(getattr(getattr(torch.ops.aten, op), overload), None)  # type: ignore[no-untyped-call]
    return exported.run_decompositions(table)


def _fill(name: str) -> Callable[[Any, Any], Any]:
    """A converter of ``aten.full`` / ``full_like`` / ``fill.Scalar`` (operator ``name``): TVM's,
    but for an infinite or NaN value, which is written as the value broadcast to the output's
    shape (TVM's lowering of ``full`` refuses a non-finite value, checking a dtype object as if
    it were a string)."""

    def convert(node: Any, importer: Any) -> Any:
        import math

        from tvm import relax

        value = node.args[1]
        if not isinstance(value, float) or math.isfinite(value):
            return tvm_converter(importer, name)(node)
        out = node.meta["val"]
        if not all(isinstance(size, int) for size in out.shape):
            raise TclError(f"aten.{name} on a tensor of symbolic shape: tcl converts static shapes")
        filled = relax.op.broadcast_to(
            relax.const(value, _out_dtype(node)), [int(n) for n in out.shape]
        )
        return _emit(importer, filled)

    return convert


def arange_start_step(node: Any, importer: Any) -> Any:
    """``torch.arange(start, end, step)``: TVM's, but for integers counting down, which TVM
    sizes as ``(end - start + step - 1) // step``, too many (64 numbers made 66):
    ``start + step * arange(n)``, ``n`` as many as PyTorch makes."""
    from tvm import relax

    start, end = node.args[:2]
    step = _arg(node, 2, "step", 1)
    if not all(isinstance(v, int) for v in (start, end, step)) or step >= 0:
        return tvm_converter(importer, "arange.start_step")(node)
    dtype = _out_dtype(node)
    counted = relax.op.arange(0, int(node.meta["val"].shape[0]), 1, dtype)
    down = relax.op.multiply(counted, relax.const(step, dtype))
    return _emit(importer, relax.op.add(down, relax.const(start, dtype)))


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The importer's ``custom_convert_map``: operator name -> converter."""
    from tvm import relax

    from tcl.integrations.tvm import elementwise, norms, numerics, promotion, scatter, windows

    return {
        **promotion.converters(),
        **numerics.converters(),
        **elementwise.converters(),
        **norms.converters(),
        **scatter.converters(),
        **windows.converters(),
        "elu.default": elu,
        "select.int": select,
        "index.Tensor": index_tensor,
        "amax.default": _reduction(relax.op.max),
        "amin.default": _reduction(relax.op.min),
        "adaptive_max_pool1d.default": _adaptive_max_pool(1),
        "adaptive_max_pool2d.default": _adaptive_max_pool(2),
        "adaptive_max_pool3d.default": _adaptive_max_pool(3),
        "upsample_nearest2d.vec": upsample_nearest2d,
        "arange.start_step": arange_start_step,
        **{name: _fill(name) for name in ("full.default", "full_like.default", "fill.Scalar")},
    }
