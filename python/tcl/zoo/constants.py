"""Folding a network's constant arithmetic with numpy before relax sees it.

Batch norm decomposed for inference leaves arithmetic on constants in the graph: each layer's
running statistics broadcast to the activation's rank and ``sqrt(var + eps)``. Relax's
``FoldConstant`` evaluates each such call by compiling its PrimFunc with LLVM and running it:
tens of milliseconds a call, 626 compilations and about 14 s on MobileNet-V2 before a single task
is extracted, and the same again when the tuned network is built. :func:`fold_constants` computes
those calls with numpy instead, in the tensors' own type. The operations it folds are exact
(layout: ``expand_dims``, ``permute_dims``, and a ``layout_transform`` that only moves elements,
as a convolution's weights are blocked by :mod:`tcl.tuning.layout`: about 10 s of LLVM
compilations on ResNet-50 otherwise) or rounded once as IEEE 754 requires (``add``,
``subtract``, ``multiply``, ``divide``, ``sqrt`` of float32 or float64), so numpy's result is
LLVM's bit for bit and the extracted tasks are the same workloads. ``FoldConstant`` still runs
after it and folds whatever else is constant (the reference twin: tests compare the two). Only
the numbering of the generated PrimFuncs' names changes, since the folded calls no longer get
PrimFuncs of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# Rounded once by IEEE 754 in numpy as in LLVM's code for the legalized call (no fast math).
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {"relax.sqrt": np.sqrt}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "relax.add": np.add,
    "relax.subtract": np.subtract,
    "relax.multiply": np.multiply,
    "relax.divide": np.divide,
}
_FLOATS = ("float32", "float64")
FOLDED = frozenset(
    {"relax.expand_dims", "relax.permute_dims", "relax.layout_transform", *_UNARY, *_BINARY}
)


def fold_constants(mod: Any) -> Any:
    """``mod`` (a relax IRModule) with every call of the operations above whose arguments are
    all constants (directly or through bindings) replaced by the constant it computes."""
    import tvm
    from tvm import relax
    from tvm.relax import expr_functor

    @expr_functor.mutator
    class Fold(relax.PyExprMutator):  # type: ignore[misc]
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            op = str(getattr(call.op, "name", ""))
            found = [self._constant(arg) for arg in call.args] if op in FOLDED else []
            if not found or any(c is None for c in found):  # a weight is not copied for nothing
                return call
            folded = evaluate(op, call.attrs, [np.asarray(c.value.numpy()) for c in found])
            return call if folded is None else relax.const(folded, str(folded.dtype))

        def _constant(self, expr: Any) -> Any:
            if isinstance(expr, relax.Var):
                expr = self.lookup_binding(expr)
            return expr if isinstance(expr, tvm.ir.expr.GenericConst) else None

    folder = Fold(mod)
    for var, func in mod.functions.items():
        if isinstance(func, relax.Function):
            folder.builder_.update_func(var, folder.visit_expr(func))
    return folder.builder_.get()


def evaluate(op: str, attrs: Any, values: list[np.ndarray]) -> np.ndarray | None:
    """The result of relax operator ``op`` (its ``attrs``) on constant ``values``, or None
    where it is not one this module folds."""
    first = values[0]
    if op == "relax.expand_dims" and len(values) == 1:
        out = np.expand_dims(first, tuple(int(axis) for axis in attrs.axis))
    elif op == "relax.permute_dims" and len(values) == 1:
        axes = None if attrs.axes is None else [int(axis) for axis in attrs.axes]
        out = np.transpose(first, axes)
    elif op == "relax.layout_transform" and len(values) == 1:
        moved = laid_out(first, attrs.index_map) if attrs.pad_value is None else None
        if moved is None:
            return None
        out = moved
    elif op in _UNARY and len(values) == 1 and first.dtype.name in _FLOATS:
        with np.errstate(all="ignore"):
            out = _UNARY[op](first)
    elif (
        op in _BINARY
        and len(values) == 2
        and first.dtype.name in _FLOATS
        and values[1].dtype == first.dtype
    ):
        with np.errstate(all="ignore"):
            out = _BINARY[op](first, values[1])
    else:
        return None
    return np.ascontiguousarray(out, dtype=first.dtype)


def laid_out(value: np.ndarray, index_map: Any) -> np.ndarray | None:
    """``value`` laid out by ``index_map`` (a TIR ``IndexMap`` of floor divisions, moduli, sums
    and products of its indices), or None where the map is not one-to-one onto its output (it
    pads) or uses other arithmetic."""
    import math

    shape = [int(d) for d in index_map.map_shape(list(value.shape))]
    if math.prod(shape) != value.size:
        return None
    indices = np.indices(value.shape)
    grid = [(var, indices[axis]) for axis, var in enumerate(index_map.initial_indices)]
    coords = [_index_values(expr, grid) for expr in index_map.final_indices]
    if any(c is None or c.min() < 0 or c.max() >= n for c, n in zip(coords, shape, strict=True)):
        return None
    written = np.zeros(shape, dtype=bool)
    written[tuple(coords)] = True
    if not written.all():  # two elements to one place: not a layout
        return None
    out = np.empty(shape, dtype=value.dtype)
    out[tuple(coords)] = value
    return out


def _index_values(expr: Any, grid: list[tuple[Any, np.ndarray]]) -> np.ndarray | None:
    """A TIR index expression's value at every index of ``grid`` ((variable, its values)
    pairs), or None for arithmetic other than + - * // %."""
    from tvm import tirx

    if isinstance(expr, tirx.IntImm):
        return np.asarray(int(expr.value))
    if isinstance(expr, tirx.Var):
        return next((values for var, values in grid if var.same_as(expr)), None)
    ops = {
        tirx.Add: np.add,
        tirx.Sub: np.subtract,
        tirx.Mul: np.multiply,
        tirx.FloorDiv: np.floor_divide,
        tirx.FloorMod: np.mod,
    }
    op = next((f for kind, f in ops.items() if isinstance(expr, kind)), None)
    if op is None:
        return None
    a, b = _index_values(expr.a, grid), _index_values(expr.b, grid)
    return None if a is None or b is None else op(a, b)
