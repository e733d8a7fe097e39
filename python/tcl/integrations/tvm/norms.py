"""Group and instance normalization as PyTorch computes them. TVM 0.27's ``group_norm`` and
``instance_norm`` take the variance in one pass, as the mean of the squares less the square of
the mean: where the mean is large against the spread the difference cancels (a group norm of
activations 300 standard deviations from zero came out 0.06 off outputs of about 3). PyTorch
subtracts the mean first; so do these. ``F.group_norm`` without weights also stopped TVM's
importer (a missing weight handed on as an empty node).

- ``aten.native_group_norm``: ``nn.GroupNorm``, ``F.group_norm``.
- ``aten._native_batch_norm_legit.no_stats``: ``nn.InstanceNorm*`` and ``F.instance_norm``
  (each sample's channels as channels of one batch), ``F.batch_norm`` with batch statistics.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.integrations.tvm.aten import _sizes


def _normalized(importer: Any, x: Any, axes: list[int], eps: float) -> tuple[Any, Any, Any]:
    """(``x`` less its mean over ``axes`` and divided by the standard deviation, the mean,
    1 / the standard deviation), the variance the biased one of the differences from the mean;
    the two statistics keep their axes."""
    from tvm import relax

    bb, dtype = importer.block_builder, str(x.ty.dtype)
    mean = bb.emit(relax.op.mean(x, axis=axes, keepdims=True))
    centred = bb.emit(relax.op.subtract(x, mean))
    variance = relax.op.mean(relax.op.multiply(centred, centred), axis=axes, keepdims=True)
    inverse = bb.emit(relax.op.rsqrt(relax.op.add(variance, relax.const(eps, dtype))))
    return bb.emit(relax.op.multiply(centred, inverse)), mean, inverse


def _affine(importer: Any, node: Any, out: Any, rank: int) -> Any:
    """``out`` scaled by the node's weight and shifted by its bias (its arguments 1 and 2, per
    channel, axis 1), where it has them."""
    from tvm import relax

    for arg, apply in ((node.args[1], relax.op.multiply), (node.args[2], relax.op.add)):
        if arg is not None:
            per_channel = relax.op.reshape(importer.env[arg], [-1] + [1] * (rank - 2))
            out = apply(out, per_channel)
    return out


def group_norm(node: Any, importer: Any) -> Any:
    """``aten.native_group_norm(x, weight, bias, N, C, HxW, groups, eps)``: (the output, each
    sample's group means, 1 / their standard deviations), the statistics of shape (N, groups)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    shape = _sizes(importer, x, "aten.native_group_norm")
    groups, eps = int(node.args[6]), float(node.args[7])
    grouped = importer.block_builder.emit(relax.op.reshape(x, [shape[0], groups, -1]))
    out, mean, inverse = _normalized(importer, grouped, [2], eps)
    out = _affine(importer, node, relax.op.reshape(out, shape), len(shape))
    bb = importer.block_builder
    statistics = [bb.emit(relax.op.reshape(s, [shape[0], groups])) for s in (mean, inverse)]
    return bb.emit(relax.Tuple([bb.emit(out), *statistics]))


def batch_statistics_norm(node: Any, importer: Any) -> Any:
    """``aten._native_batch_norm_legit.no_stats(x, weight, bias, training, momentum, eps)``:
    each channel normalized over the batch and every other axis; (the output, the channels'
    means, 1 / their standard deviations)."""
    from tvm import relax

    x = importer.env[node.args[0]]
    rank = len(_sizes(importer, x, "aten._native_batch_norm_legit"))
    out, mean, inverse = _normalized(importer, x, [0, *range(2, rank)], float(node.args[5]))
    out = _affine(importer, node, out, rank)
    bb = importer.block_builder
    statistics = [bb.emit(relax.op.reshape(s, [-1])) for s in (mean, inverse)]
    return bb.emit(relax.Tuple([bb.emit(out), *statistics]))


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The converters of this module, by operator name."""
    return {
        "native_group_norm.default": group_norm,
        "_native_batch_norm_legit.no_stats": batch_statistics_norm,
    }
