"""Sliding windows and resampling that TVM 0.27's PyTorch importer gets wrong or cannot convert:

- ``F.unfold`` / ``F.fold`` (``aten.im2col`` / ``aten.col2im``): TVM decomposes them into
  index operations its own converter then fails on.
- ``Tensor.unfold`` (windows along one axis): no converter.
- ``F.interpolate(..., antialias=True)``: TVM treats bilinear as plain bilinear, which is wrong
  wherever the image shrinks, and has no bicubic one. Resampling is linear and separable, so
  each axis's weights are PyTorch's own, read off its kernel applied to the axis's unit
  vectors, and the image is two matrix products (tasks MetaSchedule tunes as such).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.errors import TclError
from tcl.integrations.tvm.aten import _arg, _emit, _sizes, tvm_converter


def _pairs(value: Any) -> list[int]:
    values = [int(v) for v in value] if isinstance(value, (list, tuple)) else [int(value)]
    return values * 2 if len(values) == 1 else values


def _window_starts(size: int, kernel: int, dilation: int, padding: int, stride: int) -> int:
    """How many windows fit along an axis of ``size`` (PyTorch's output size of a convolution)."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _with_batch(importer: Any, x: Any, sizes: list[int], rank: int) -> tuple[Any, list[int], bool]:
    """``x`` with a batch axis of 1 where it has ``rank - 1`` axes; its sizes; whether it had
    one."""
    from tvm import relax

    if len(sizes) == rank:
        return x, sizes, True
    return _emit(importer, relax.op.expand_dims(x, 0)), [1, *sizes], False


def _window_counts(
    sizes: Any, kernel: list[int], dilation: list[int], padding: list[int], stride: list[int]
) -> list[int]:
    """How many windows fit along each of the two axes of ``sizes``."""
    return [
        _window_starts(s, *a)
        for s, a in zip(sizes, zip(kernel, dilation, padding, stride, strict=True), strict=True)
    ]


def _window_slices(
    padded: Any,
    axes: list[int],
    kernel: list[int],
    dilation: list[int],
    counts: list[int],
    stride: list[int],
) -> list[tuple[Any, list[int]]]:
    """For each kernel position (row-major), the strided slice of ``padded`` along ``axes``
    that holds that position of every window, and where the position starts."""
    from tvm import relax

    slices = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            begin = [i * dilation[0], j * dilation[1]]
            end = [b + (o - 1) * s + 1 for b, o, s in zip(begin, counts, stride, strict=True)]
            slices.append((relax.op.strided_slice(padded, axes, begin, end, stride), begin))
    return slices


def im2col(node: Any, importer: Any) -> Any:
    """``F.unfold(x, kernel, dilation, padding, stride)``: ``(N, C, H, W)`` to ``(N, C * kh *
    kw, L)``, each window's ``kh x kw`` pixels of channel ``c`` at rows ``c * kh * kw + i * kw
    + j``: one strided slice of the padded image per kernel position, stacked."""
    from tvm import relax

    x = importer.env[node.args[0]]
    kernel, dilation, padding, stride = (_pairs(a) for a in node.args[1:5])
    x, sizes, batched = _with_batch(importer, x, _sizes(importer, x, "F.unfold"), 4)
    n, c, h, w = sizes
    out = _window_counts((h, w), kernel, dilation, padding, stride)
    pad = [0, 0, 0, 0, padding[0], padding[0], padding[1], padding[1]]
    padded = _emit(importer, relax.op.nn.pad(x, pad)) if any(padding) else x
    slices = [cut for cut, _ in _window_slices(padded, [2, 3], kernel, dilation, out, stride)]
    stacked = relax.op.stack(slices, axis=2)  # (N, C, kh * kw, oh, ow)
    cols = relax.op.reshape(stacked, [n, c * kernel[0] * kernel[1], out[0] * out[1]])
    return _emit(importer, cols if batched else relax.op.squeeze(cols, [0]))


def col2im(node: Any, importer: Any) -> Any:
    """``F.fold(x, output_size, kernel, dilation, padding, stride)``, the adjoint of
    :func:`im2col`: each column's values added back at the pixels its window covers (one
    scatter-add over the padded image's pixels, the positions computed here)."""
    import numpy as np
    from tvm import relax

    x = importer.env[node.args[0]]
    size = _pairs(node.args[1])
    kernel, dilation, padding, stride = (_pairs(a) for a in node.args[2:6])
    x, sizes, batched = _with_batch(importer, x, _sizes(importer, x, "F.fold"), 3)
    n, ck, length = sizes
    c = ck // (kernel[0] * kernel[1])
    out = _window_counts(size, kernel, dilation, padding, stride)
    ph, pw = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    ki, kj, oi, oj = np.meshgrid(*(np.arange(k) for k in (*kernel, *out)), indexing="ij")
    rows = ki * dilation[0] + oi * stride[0]
    target = (rows * pw + kj * dilation[1] + oj * stride[1]).reshape(1, 1, -1)
    positions = relax.op.broadcast_to(relax.const(target.astype("int64")), [n, c, ck // c * length])
    values = relax.op.reshape(x, [n, c, ck // c * length])
    image = relax.op.zeros([n, c, ph * pw], str(x.ty.dtype))
    image = relax.op.scatter_elements(image, positions, values, 2, "add")
    image = relax.op.reshape(image, [n, c, ph, pw])
    image = relax.op.strided_slice(
        image, [2, 3], [padding[0], padding[1]], [padding[0] + size[0], padding[1] + size[1]]
    )
    return _emit(importer, image if batched else relax.op.squeeze(image, [0]))


def unfold(node: Any, importer: Any) -> Any:
    """``x.unfold(dim, size, step)``: the windows along ``dim`` become that axis, each window's
    ``size`` elements a new last axis (a gather of the windows' positions)."""
    import numpy as np
    from tvm import relax

    x = importer.env[node.args[0]]
    sizes = _sizes(importer, x, "Tensor.unfold")
    dim, size, step = int(node.args[1]) % max(len(sizes), 1), int(node.args[2]), int(node.args[3])
    windows = (sizes[dim] - size) // step + 1
    positions = np.arange(windows)[:, None] * step + np.arange(size)[None, :]
    gathered = relax.op.take(x, relax.const(positions.astype("int64")), dim)
    order = [a for a in range(len(sizes) + 1) if a != dim + 1] + [dim + 1]
    return _emit(importer, relax.op.permute_dims(gathered, order))


def _resampling(op_name: str, spatial: int) -> Callable[[Any, Any], Any]:
    """A converter of PyTorch's linear resampling ``op_name`` over the last ``spatial`` axes
    (``.default``: ``(x, output_size, align_corners, *scales)``; ``.vec``: ``(x, output_size,
    align_corners, scale_factors)``): one matrix product per axis, ``A @ x`` along it."""

    def convert(node: Any, importer: Any) -> Any:
        from tvm import relax

        x = importer.env[node.args[0]]
        sizes = _sizes(importer, x, f"aten.{op_name}")
        outs = [int(s) for s in node.meta["val"].shape[-spatial:]]
        align_corners = bool(node.args[2])
        if str(node.target).endswith(".vec"):
            given = node.args[3] if len(node.args) > 3 and node.args[3] else [None] * spatial
            scales = [None if s is None else float(s) for s in given]
        else:
            scales = [node.args[k] if len(node.args) > k else None for k in range(3, 3 + spatial)]
        rank = len(sizes)
        for axis in range(spatial):
            position = rank - spatial + axis
            weights = _resampling_weights(
                op_name, spatial, axis, sizes[position], outs[axis], align_corners, scales[axis]
            )
            matrix = relax.const(weights.astype(str(x.ty.dtype)))
            if position == rank - 2:
                x = _emit(importer, relax.op.matmul(matrix, x))
                continue
            order = list(range(rank))
            order[position], order[-1] = order[-1], order[position]  # its own inverse
            last = x if position == rank - 1 else relax.op.permute_dims(x, order)
            product = relax.op.matmul(last, relax.op.permute_dims(matrix, [1, 0]))
            x = _emit(
                importer, product if position == rank - 1 else relax.op.permute_dims(product, order)
            )
        return x

    return convert


def _resampling_weights(
    op_name: str, spatial: int, axis: int, size: int, out: int, align_corners: bool, scale: Any
) -> Any:
    """PyTorch's ``(out, size)`` weights of resampling ``op_name`` along spatial axis ``axis``:
    its own kernel applied to each unit vector along that axis, the other axes two pixels wide
    and kept (an axis one pixel wide is misread by the antialiased kernels)."""
    import torch

    shape = [2] * spatial
    shape[axis] = size
    basis = torch.eye(size, dtype=torch.float64).reshape(
        size, 1, *[size if a == axis else 1 for a in range(spatial)]
    )
    basis = basis.expand(size, 1, *shape).contiguous()
    output_size = list(shape)
    output_size[axis] = out
    scales = [scale if a == axis else None for a in range(spatial)]
    resampled = getattr(torch.ops.aten, op_name).default(basis, output_size, align_corners, *scales)
    response = resampled[
        (slice(None), 0, *[slice(None) if a == axis else 0 for a in range(spatial)])
    ]
    return response.T.to(torch.float32).numpy()


def upsample_bilinear2d(node: Any, importer: Any) -> Any:
    """``F.interpolate(x, scale_factor=s, mode="bilinear")``: PyTorch maps output pixels back by
    ``1 / s``, TVM by the sizes' ratio, which differ where ``s`` times a size is not a whole
    number (1.7 of 12 pixels is 20: TVM's pixels are 0.6 apart, PyTorch's 0.588). There it is
    PyTorch's weights (:func:`_resampling`); elsewhere TVM's converter, which is right."""
    x = importer.env[node.args[0]]
    *_, h, w = _sizes(importer, x, "aten.upsample_bilinear2d")
    scales = node.args[3] if len(node.args) > 3 and node.args[3] else None
    if scales and not node.args[2]:
        outs = [int(s) for s in node.meta["val"].shape[-2:]]
        if any(o != size * float(s) for o, size, s in zip(outs, (h, w), scales, strict=True)):
            return _resampling("upsample_bilinear2d", 2)(node, importer)
    return tvm_converter(importer, "upsample_bilinear2d.vec")(node)


def grid_sample(node: Any, importer: Any) -> Any:
    """``F.grid_sample(x, grid, mode, padding_mode, align_corners)`` of an ``(N, C, H, W)``
    image: TVM's kernel reads the grid as ``(N, 2, H_out, W_out)`` where its converter hands it
    PyTorch's ``(N, H_out, W_out, 2)`` (a wrong shape), so the grid is transposed for it."""
    from tvm import relax, topi

    x, grid = importer.env[node.args[0]], importer.env[node.args[1]]
    method = {0: "bilinear", 1: "nearest", 2: "bicubic"}[
        int(_arg(node, 2, "interpolation_mode", 0))
    ]
    padding = {0: "zeros", 1: "border", 2: "reflection"}[int(_arg(node, 3, "padding_mode", 0))]
    align_corners = bool(_arg(node, 4, "align_corners", False))
    channels_first = _emit(importer, relax.op.permute_dims(grid, [0, 3, 1, 2]))
    return importer.block_builder.emit_te(
        topi.image.grid_sample, x, channels_first, method, "NCHW", padding, align_corners
    )


def max_pool2d_with_indices(node: Any, importer: Any) -> Any:
    """``F.max_pool2d(..., return_indices=True)``: TVM's values, and the indices PyTorch gives
    (each maximum's position in its ``H x W`` plane; TVM's converter gives zeros), where the
    network reads them: the argmax over the window's positions, each a strided slice of the
    image padded with -inf, the first of equal maxima as in PyTorch."""
    import numpy as np
    from tvm import relax

    values = tvm_converter(importer, "max_pool2d_with_indices.default")(node)
    if all(user.args[1] == 0 for user in node.users):
        return values
    x = importer.env[node.args[0]]
    kernel = _pairs(node.args[1])
    stride = _pairs(_arg(node, 2, "stride", []) or kernel)
    padding, dilation = _pairs(_arg(node, 3, "padding", 0)), _pairs(_arg(node, 4, "dilation", 1))
    *lead, h, w = _sizes(importer, x, "max_pool2d")
    out_h, out_w = (int(s) for s in node.meta["val"][0].shape[-2:])
    # enough -inf after the image for ceil_mode's last windows
    extra = [
        max(0, (o - 1) * s + d * (k - 1) + 1 - size - p)
        for o, s, d, k, size, p in zip(
            (out_h, out_w), stride, dilation, kernel, (h, w), padding, strict=True
        )
    ]
    pad = [0, 0] * len(lead) + [
        padding[0],
        padding[0] + extra[0],
        padding[1],
        padding[1] + extra[1],
    ]
    padded = _emit(importer, relax.op.nn.pad(x, pad, pad_value=float("-inf")))
    axes = [len(lead), len(lead) + 1]
    cuts = _window_slices(padded, axes, kernel, dilation, [out_h, out_w], stride)
    windows = [cut for cut, _ in cuts]
    offsets = [begin[0] * w + begin[1] for _, begin in cuts]
    best = relax.op.argmax(relax.op.stack(windows, axis=0), axis=0)  # first maximum
    rows = np.arange(out_h)[:, None] * stride[0] - padding[0]
    corner = rows * w + np.arange(out_w)[None, :] * stride[1] - padding[1]
    position = relax.op.add(
        relax.op.take(relax.const(np.array(offsets, dtype="int64")), best, 0),
        relax.const(corner.astype("int64")),
    )
    pooled = _emit(importer, relax.TupleGetItem(values, 0))
    return _emit(importer, relax.Tuple([pooled, _emit(importer, position)]))


def max_pool3d(node: Any, importer: Any) -> Any:
    """``F.max_pool3d`` (``aten.max_pool3d`` and ``_with_indices``): TVM's pooling, with the
    stride the kernel's where none is given (TVM's converter reads only a missing stride so, and
    fails on the empty one ``torch.export`` writes). Indices are refused where read."""
    from tvm import relax

    x, kernel, *rest = importer.retrieve_args(node)
    stride = rest[0] if rest and rest[0] else kernel
    padding, dilation, ceil_mode = (
        rest[k] if len(rest) > k else d for k, d in ((1, 0), (2, 1), (3, False))
    )
    pooled = importer._max_pool3d_impl(x, kernel, stride, padding, dilation, ceil_mode)
    if not str(node.target).startswith("aten.max_pool3d_with_indices"):
        return pooled
    if any(user.args[1] != 0 for user in node.users):
        raise TclError(
            "aten.max_pool3d_with_indices: the network reads the pooling's indices, "
            "which tcl cannot"
        )
    return _emit(importer, relax.Tuple([pooled, pooled]))  # (values, unread indices)


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The converters of this module, by operator name."""
    resample = {
        f"{name}.{overload}": _resampling(name, spatial)
        for name, spatial in (
            ("_upsample_bilinear2d_aa", 2),
            ("_upsample_bicubic2d_aa", 2),
            ("upsample_linear1d", 1),
            ("upsample_trilinear3d", 3),
        )
        for overload in ("default", "vec")
    }
    return {
        "im2col.default": im2col,
        "col2im.default": col2im,
        "unfold.default": unfold,
        "grid_sampler_2d.default": grid_sample,
        "max_pool2d_with_indices.default": max_pool2d_with_indices,
        **resample,
        "upsample_bilinear2d.vec": upsample_bilinear2d,
        "max_pool3d.default": max_pool3d,
        "max_pool3d_with_indices.default": max_pool3d,
    }
