"""Fast math for the tuned network: GELU, erf, exp, tanh and softmax as vectorizable
approximations instead of calls to the C library.

Legalized for a CPU, ``erf`` and ``exp`` become one libm call per element: no schedule the
tuner finds can vectorize them, so a transformer's GELU and softmax stay scalar (BERT-tiny's
two GELUs took 0.44 of its 2.06 ms, tuned; ``bench/bench_gap.py``). TVM's ``fast_erf``,
``fast_exp`` and ``fast_tanh`` are polynomial approximations built from plain arithmetic,
which the tuner's schedules vectorize. They differ from the exact functions by about float32
rounding (``tests/tuning/test_fast_math.py`` bounds it against numpy); ``tcl tune`` reports
the tuned network's largest difference from PyTorch either way, and ``--exact-math`` keeps
the library calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def fast_math(mod: Any) -> Any:
    """``mod`` (a relax IRModule) with float32 GELU (erf and tanh forms), erf, exp, tanh and
    softmax replaced by TVM's fast approximations; other types are left as they are."""
    from tvm import relax
    from tvm.relax import expr_functor

    @expr_functor.mutator
    class FastMath(relax.PyExprMutator):  # type: ignore[misc]
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            name = str(getattr(call.op, "name", ""))
            if name not in _FAST or not call.args or not _is_float32(call.args[0]):
                return call
            hint, form = _FAST[name]
            return self.builder_.call_te(
                lambda x: form(call, x), call.args[0], primfunc_name_hint=hint
            )

    mutator = FastMath(mod)
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            mutator.builder_.update_func(gv, mutator.visit_expr(func))
    return mutator.builder_.get()


def _gelu(x: Any) -> Any:
    """x * (1 + erf(x / sqrt(2))) / 2 with TVM's fast erf."""
    from tvm import topi

    half = topi.multiply(x, 0.5)
    return topi.add(half, topi.multiply(half, topi.fast_erf(topi.multiply(x, 1 / math.sqrt(2)))))


def _gelu_tanh(x: Any) -> Any:
    """x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2 with TVM's fast tanh."""
    from tvm import topi

    inner = topi.add(x, topi.multiply(topi.multiply(topi.multiply(x, x), x), 0.044715))
    half = topi.multiply(x, 0.5)
    scaled = topi.multiply(inner, math.sqrt(2 / math.pi))
    return topi.add(half, topi.multiply(half, topi.fast_tanh(scaled)))


def _topi(name: str) -> Callable[[Any, Any], Any]:
    """TVM's ``topi.<name>`` of the call's first argument."""

    def form(call: Any, x: Any) -> Any:
        from tvm import topi

        return getattr(topi, name)(x)

    return form


def _softmax(call: Any, x: Any) -> Any:
    from tvm import topi

    return topi.nn.fast_softmax(x, int(call.attrs.axis))


# relax op -> (the PrimFunc's name, its fast form: (the call, its first argument) -> a TE tensor)
_FAST: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "relax.nn.gelu": ("gelu", lambda call, x: _gelu(x)),
    "relax.nn.gelu_tanh": ("gelu_tanh", lambda call, x: _gelu_tanh(x)),
    "relax.nn.softmax": ("fast_softmax", _softmax),
    "relax.exp": ("fast_exp", _topi("fast_exp")),
    "relax.erf": ("fast_erf", _topi("fast_erf")),
    "relax.tanh": ("fast_tanh", _topi("fast_tanh")),
}


def _is_float32(expr: Any) -> bool:
    """TVM's fast approximations are float32 only."""
    return str(getattr(getattr(expr, "ty", None), "dtype", "")) == "float32"
