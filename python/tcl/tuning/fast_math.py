"""Fast math for the tuned network: GELU, erf, exp, tanh, sigmoid (and so SiLU) and softmax
as vectorizable approximations instead of calls to the C library.

Legalized for a CPU, ``erf``, ``exp`` and ``sigmoid`` become one libm call per element: no
schedule the tuner finds can vectorize them, so a transformer's GELU and softmax stay scalar
(BERT-tiny's two GELUs took 0.44 of its 2.06 ms, tuned; ``bench/bench_gap.py``), and so does
the sigmoid of every SiLU (``x * sigmoid(x)``, as PyTorch's SiLU is imported) fused into a
convolution's epilogue. TVM's ``fast_erf``, ``fast_exp`` and ``fast_tanh`` are polynomial
approximations built from plain arithmetic, which the tuner's schedules vectorize; the sigmoid
is ``1 / (1 + fast_exp(-x))``. They differ from the exact functions by about float32
rounding (``tests/tuning/test_fast_math.py`` bounds it against numpy); ``tcl tune`` reports
the tuned network's largest difference from PyTorch either way, and ``--exact-math`` keeps
the library calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


def fast_math(mod: Any) -> Any:
    """``mod`` (a relax IRModule) with float32 GELU (erf and tanh forms), erf, exp, tanh,
    sigmoid, SiLU and softmax replaced by TVM's fast approximations; other types are left as
    they are."""
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


def _sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), its exp the fast one, in one elementwise stage named as the exact
    sigmoid's (``compute``): a fused task then has the blocks it has with the exact sigmoid, so
    the programs tuned for those (transplants) still apply to it."""
    from tvm import te

    return te.compute(
        x.shape, lambda *i: 1.0 / (1.0 + _fast_exp(-x(*i))), name="compute", tag="elemwise"
    )


def _silu(x: Any) -> Any:
    """x * sigmoid(x) with the fast sigmoid."""
    from tvm import topi

    return topi.multiply(x, _sigmoid(x))


# exp(v) = 2^n exp(r), n = round(v / ln 2), |r| <= ln(2) / 2, exp(r) by its degree-7 polynomial
# (Cephes' expf coefficients, as TVM's fast_exp): float32's range clamps v.
_EXP_RANGE = 88.3762626647949
_LOG2E, _LN2 = 1.44269504088896341, 0.693147180559945
_EXP_POLY = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)


def _fast_exp(e: Any) -> Any:
    """exp of a float32 expression, in float32 arithmetic and bit operations only."""
    from tvm import tirx

    v = tirx.max(tirx.min(e, _EXP_RANGE), -_EXP_RANGE)
    n = tirx.floor(v * _LOG2E + 0.5)
    r = v - n * _LN2
    poly = tirx.const(_EXP_POLY[0], "float32")
    for c in _EXP_POLY[1:]:
        poly = poly * r + c
    poly = poly * r * r + r + 1.0
    two_n = tirx.reinterpret("float32", tirx.Cast("int32", n + 127.0) << 23)
    return two_n * poly


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
    "relax.sigmoid": ("fast_sigmoid", lambda call, x: _sigmoid(x)),
    "relax.nn.silu": ("silu", lambda call, x: _silu(x)),
}


def _is_float32(expr: Any) -> bool:
    """TVM's fast approximations are float32 only."""
    return str(getattr(getattr(expr, "ty", None), "dtype", "")) == "float32"
