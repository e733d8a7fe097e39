"""Operands promoted as PyTorch promotes them, where TVM 0.27's PyTorch importer does not.

TVM makes a scalar a constant of the tensor's dtype and leaves a tensor's dtype alone, so on
integers ``i * 0.5`` multiplies by 0, ``i / 2`` divides as integers and ``(i > 0) * 1.5`` stays
boolean, silently; ``x // 3``, ``torch.exp(i)`` and ``torch.cat([i, x])`` fail; ``add``'s and
``sub``'s ``alpha`` are dropped. :func:`converters` wraps TVM's converters of these operators so
that they get operands of the dtype PyTorch computes in (the graph's own record of each output's
dtype says which); a network whose dtypes already agree converts as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.integrations.tvm.aten import in_dtype, tvm_converter

# Elementwise arithmetic and comparisons, whose operands PyTorch promotes to a common dtype first.
BINARY = [
    f"{op}.{overload}"
    for op in ("add", "sub", "mul", "div", "remainder", "eq", "ne", "gt", "ge", "lt", "le")
    for overload in ("Tensor", "Scalar")
] + ["floor_divide.default", "maximum.default", "minimum.default", "clamp.default"]
# Integers in, floats out in PyTorch; TVM's kernels of these take floats only, or keep integers.
_FLOAT_OPS = (
    "exp expm1 log log1p log2 log10 sqrt rsqrt reciprocal sigmoid tanh sin cos tan asin acos atan "
    "sinh cosh erf"
)
FLOAT_RESULT = [f"{op}.default" for op in _FLOAT_OPS.split()] + [
    "pow.Tensor_Scalar",
    "pow.Tensor_Tensor",
]
# Booleans multiplied or added (torch.isfinite decomposes into a product): TVM's kernels of
# these take numbers only, PyTorch's give the logical and / or.
LOGICAL = {"mul.Tensor": "logical_and", "add.Tensor": "logical_or"}
# Operands of several dtypes, or a bool one that PyTorch sums as integers.
MIXED = ["cat.default", "stack.default", "where.self", "cumsum.default", "cumprod.default"]


def _computation_dtype(node: Any) -> str | None:
    """The dtype PyTorch computes ``node``'s arithmetic in: its output's, or for a comparison
    (a bool output) its operands' common one. None where the graph does not say."""
    import torch
    from torch import fx

    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        return None
    dtype = value.dtype
    if dtype == torch.bool:
        operands: list[Any] = []
        for arg in node.args[:2]:
            known = arg.meta.get("val") if isinstance(arg, fx.Node) else arg
            if isinstance(known, torch.Tensor):
                known = torch.empty(known.shape, dtype=known.dtype, device="meta")
            operands.append(known)
        operands.sort(key=lambda o: not isinstance(o, torch.Tensor))  # a tensor first
        if len(operands) < 2 or not isinstance(operands[0], torch.Tensor):
            return None
        dtype = torch.result_type(operands[0], operands[1])
    return str(dtype).removeprefix("torch.")


def _without_legacy_empties(tensors: list[Any]) -> list[Any]:
    """``torch.cat``'s tensors less those of shape ``(0,)``, which PyTorch skips whatever the
    others' rank (a cache that starts empty, as Hugging Face's key-value cache does, is one) and
    TVM's concatenation refuses beside tensors of another rank."""
    from torch import fx

    def legacy_empty(t: Any) -> bool:
        value = t.meta.get("val") if isinstance(t, fx.Node) else None
        return value is not None and tuple(value.shape) == (0,)

    kept = [t for t in tensors if not legacy_empty(t)]
    return kept if kept and len(kept) < len(tensors) else list(tensors)


def _promoted(name: str) -> Callable[[Any, Any], Any]:
    """TVM's converter of ``name`` with its operands promoted as PyTorch promotes them: each
    tensor operand cast to the dtype PyTorch computes in (a ``where``'s condition aside), an
    integer scalar of a float computation made a float, and ``add``'s and ``sub``'s ``alpha``
    applied first."""

    def convert(node: Any, importer: Any) -> Any:
        from torch import fx
        from tvm import relax

        dtype = _computation_dtype(node)
        original = tvm_converter(importer, name)
        if dtype is None:
            return original(node)
        logical = LOGICAL.get(name) if dtype == "bool" else None
        if logical is not None and all(isinstance(a, fx.Node) for a in node.args[:2]):
            a, b = (importer.env[arg] for arg in node.args[:2])
            return importer.block_builder.emit(getattr(relax.op, logical)(a, b))
        bb, saved_env, saved = importer.block_builder, {}, (node.args, node.kwargs)
        args = list(node.args)
        if name == "cat.default":
            args[0] = _without_legacy_empties(args[0])
        floats = name in BINARY and "float" in dtype  # elsewhere an integer is a dim or exponent
        for k, arg in enumerate(args):
            if k == 0 and name == "where.self":  # the condition stays boolean
                continue
            for operand in arg if isinstance(arg, (list, tuple)) else [arg]:  # cat's tensors
                if not isinstance(operand, fx.Node) or operand in saved_env:
                    continue
                value = importer.env[operand]
                if isinstance(value.ty, relax.TensorType) and str(value.ty.dtype) != dtype:
                    saved_env[operand] = value
                    importer.env[operand] = in_dtype(importer, value, dtype)
            if floats and isinstance(arg, int) and not isinstance(arg, bool):
                args[k] = float(arg)
        kwargs = dict(node.kwargs)
        alpha = kwargs.pop("alpha", 1)
        if alpha != 1:  # add/sub: x + alpha * y
            if isinstance(args[1], fx.Node):
                scaled = relax.op.multiply(importer.env[args[1]], relax.const(alpha, dtype))
                saved_env.setdefault(args[1], importer.env[args[1]])
                importer.env[args[1]] = bb.emit(scaled)
            else:
                args[1] = args[1] * alpha
        node.args, node.kwargs = tuple(args), kwargs
        try:
            return original(node)
        finally:
            node.args, node.kwargs = saved
            importer.env.update(saved_env)

    return convert


def div_mode(node: Any, importer: Any) -> Any:
    """``torch.div(a, b, rounding_mode=...)`` and ``a // b`` (``aten.div.Tensor_mode``) with the
    operands promoted as PyTorch promotes them: TVM's converter makes a scalar an int32 or
    float32 constant whatever the tensor's dtype, and fails (``x // 3``)."""
    from torch import fx
    from tvm import relax

    dtype = _computation_dtype(node)
    mode = node.kwargs.get("rounding_mode", node.args[2] if len(node.args) > 2 else None)
    if dtype is None or mode not in ("floor", "trunc"):
        return tvm_converter(importer, "div.Tensor_mode")(node)
    bb = importer.block_builder
    operands = [
        in_dtype(importer, importer.env[arg], dtype)
        if isinstance(arg, fx.Node)
        else relax.const(arg, dtype)
        for arg in node.args[:2]
    ]
    if mode == "floor":
        return bb.emit(relax.op.floor_divide(*operands))
    quotient = bb.emit(relax.op.divide(*operands))  # integers divide towards zero already
    return quotient if "int" in dtype else bb.emit(relax.op.trunc(quotient))


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """Operator name -> converter, for the importer's ``custom_convert_map``."""
    return {
        **{name: _promoted(name) for name in BINARY + FLOAT_RESULT + MIXED},
        "div.Tensor_mode": div_mode,
    }
