"""Folding a network's constant arithmetic with numpy before relax sees it.

Batch norm decomposed for inference leaves arithmetic on constants in the graph: each layer's
running statistics broadcast to the activation's rank and ``sqrt(var + eps)``. Relax's
``FoldConstant`` evaluates each such call by compiling its PrimFunc with LLVM and running it:
tens of milliseconds a call, 626 compilations and about 14 s on MobileNet-V2 before a single task
is extracted, and the same again when the tuned network is built. :func:`fold_constants` computes
those calls with numpy instead, in the tensors' own type. The operations it folds are exact
(layout: ``expand_dims``, ``permute_dims``) or rounded once as IEEE 754 requires (``add``,
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
FOLDED = frozenset({"relax.expand_dims", "relax.permute_dims", *_UNARY, *_BINARY})


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
