"""Elementwise operators TVM 0.27's PyTorch importer has no converter for (the import stops),
each written here with relax's operators: ``torch.exp2``, ``torch.signbit``, ``torch.copysign``,
``torch.fmax`` / ``fmin`` (NaN-ignoring maximum and minimum), bit shifts (``<<``, ``>>``) and
``torch.erfinv``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tcl.integrations.tvm.aten import _emit, _out_dtype, in_dtype


def _operand(importer: Any, arg: Any, dtype: str) -> Any:
    """A converter's operand ``arg`` (a graph node or a Python number) as a relax value of
    ``dtype``."""
    from torch import fx
    from tvm import relax

    if isinstance(arg, fx.Node):
        return in_dtype(importer, importer.env[arg], dtype)
    return relax.const(arg, dtype)


def exp2(node: Any, importer: Any) -> Any:
    """``torch.exp2(x)``: ``2 ** x`` in the output's (float) dtype."""
    from tvm import relax

    dtype = _out_dtype(node)
    x = _operand(importer, node.args[0], dtype)
    return _emit(importer, relax.op.power(relax.const(2.0, dtype), x))


def _sign_bit(importer: Any, x: Any) -> Any:
    """Whether each element's sign bit is set (a float's bits read as an integer of its width
    are negative exactly then, -0.0 and negative NaNs included); an integer's sign."""
    from tvm import relax, topi

    dtype = str(x.ty.dtype)
    if not dtype.startswith(("float", "bfloat")):
        return relax.op.less(x, relax.const(0, dtype))
    bits = "int" + "".join(c for c in dtype if c.isdigit())
    return importer.block_builder.emit_te(
        lambda t: topi.less(topi.reinterpret(t, bits), topi.full([], bits, 0)), x
    )


def signbit(node: Any, importer: Any) -> Any:
    """``torch.signbit(x)``: the sign bit of each element, set for -0.0 too."""
    return _emit(importer, _sign_bit(importer, importer.env[node.args[0]]))


def copysign(node: Any, importer: Any) -> Any:
    """``torch.copysign(a, b)`` (tensor or number ``b``): ``|a|`` with ``b``'s sign bit."""
    from tvm import relax

    dtype = _out_dtype(node)
    a, b = (_operand(importer, arg, dtype) for arg in node.args[:2])
    magnitude = relax.op.abs(a)
    negative = _sign_bit(importer, importer.block_builder.emit(b))
    return _emit(importer, relax.op.where(negative, relax.op.negative(magnitude), magnitude))


def _nan_ignoring(extreme: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A converter of ``torch.fmax`` / ``fmin`` (``extreme``: relax's maximum or minimum): the
    other operand where one is NaN, NaN only where both are."""

    def convert(node: Any, importer: Any) -> Any:
        from tvm import relax

        dtype = _out_dtype(node)
        a, b = (_operand(importer, arg, dtype) for arg in node.args[:2])
        if not dtype.startswith(("float", "bfloat")):
            return _emit(importer, extreme(a, b))
        out = relax.op.where(relax.op.isnan(b), a, extreme(a, b))
        return _emit(importer, relax.op.where(relax.op.isnan(a), b, out))

    return convert


def _shift(shift: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A converter of ``a << b`` / ``a >> b`` (``shift``: relax's ``left_shift`` or
    ``right_shift``; arithmetic on a signed integer, as in PyTorch)."""

    def convert(node: Any, importer: Any) -> Any:
        dtype = _out_dtype(node)
        a, b = (_operand(importer, arg, dtype) for arg in node.args[:2])
        return _emit(importer, shift(a, b))

    return convert


# Winitzki's closed form for erfinv (relative error under 2e-3), then Halley's steps on erf
WINITZKI_A = 0.147
HALLEY_STEPS = 2


def erfinv(node: Any, importer: Any) -> Any:
    """``torch.erfinv(y)``: Winitzki's closed form, then two Halley steps on ``erf(x) - y``
    (each triples the correct digits: 2e-3 to float32's rounding). As ``|y|`` nears 1 the slope
    of erf vanishes and float32's ``erf`` (to 6e-8) bounds ``x`` to about ``6e-8 / erf'(x)``:
    8e-4 at ``y = 0.99999``. ``|y| = 1`` gives infinity and ``|y| > 1`` NaN, as in PyTorch."""
    from tvm import relax

    dtype = _out_dtype(node)
    y = _operand(importer, node.args[0], dtype)
    bb = importer.block_builder

    def c(value: float) -> Any:
        return relax.const(value, dtype)

    log_rest = bb.emit(relax.op.log(relax.op.subtract(c(1.0), relax.op.multiply(y, y))))
    first = relax.op.add(c(2.0 / (math.pi * WINITZKI_A)), relax.op.multiply(log_rest, c(0.5)))
    root = relax.op.sqrt(
        relax.op.subtract(relax.op.multiply(first, first), relax.op.divide(log_rest, c(WINITZKI_A)))
    )
    x = bb.emit(relax.op.multiply(relax.op.sign(y), relax.op.sqrt(relax.op.subtract(root, first))))
    finite = bb.emit(relax.op.less(relax.op.abs(y), c(1.0)))  # else x is inf or NaN already
    for _ in range(HALLEY_STEPS):
        # f = erf(x) - y, f' = 2/sqrt(pi) exp(-x^2), f'' = -2x f': x -= f / (f' + x f)
        f = relax.op.subtract(relax.op.erf(x), y)
        slope = relax.op.multiply(
            c(2.0 / math.sqrt(math.pi)), relax.op.exp(relax.op.negative(relax.op.multiply(x, x)))
        )
        step = relax.op.divide(f, relax.op.add(slope, relax.op.multiply(x, f)))
        x = bb.emit(relax.op.where(finite, relax.op.subtract(x, step), x))
    return x


def converters() -> dict[str, Callable[[Any, Any], Any]]:
    """The converters of this module, by operator name."""
    from tvm import relax

    left, right = _shift(relax.op.left_shift), _shift(relax.op.right_shift)
    shifts = {
        f"{name}.{overload}": shift
        for names, shift in (
            (("__lshift__", "bitwise_left_shift"), left),
            (("__rshift__", "bitwise_right_shift"), right),
        )
        for name in names
        for overload in ("Scalar", "Tensor", "Tensor_Scalar", "Scalar_Tensor")
    }
    return {
        "exp2.default": exp2,
        "signbit.default": signbit,
        "copysign.Tensor": copysign,
        "copysign.Scalar": copysign,
        "fmax.default": _nan_ignoring(relax.op.maximum),
        "fmin.default": _nan_ignoring(relax.op.minimum),
        "erfinv.default": erfinv,
        **shifts,
    }
