"""The data layout a network's 2-D convolutions are tuned and built in.

A network exported from PyTorch convolves NCHW activations with OIHW weights. With
``conv_layout="NHWC"`` every ``relax.nn.conv2d`` is rewritten to NHWC activations and OHWI
weights (relax's ``ConvertLayout``): channels become the innermost, contiguous axis, the one
MetaSchedule's CPU rules vectorize, as TVM's CPU tuning tutorials lay convolutions out.
``conv_layout="NCHW16c"`` blocks the channels by 16 (NCHW16c activations, OIHW16o weights),
as oneDNN lays out its CPU convolutions: a block of 16 output channels is one AVX-512 vector
(two AVX2 ones) whatever the image's width, and it is innermost in the weights too, so a
schedule multiplies it by one broadcast input. ``"NCHW8c"`` blocks by 8, one AVX2 vector, and
blocks channel counts that 16 does not divide (MobileNet-V2's 24). Relax legalizes only 4-D
layouts, so the blocked convolutions are computed by :func:`conv2d_nchwc` (with groups and
depthwise), and ReLU6's clip is written as bounds, which relax keeps in the blocked layout. A
convolution whose channels the block does not divide (a 3-channel stem) stays NCHW.

The operators between two convolutions follow the new layout where they can; the network's
inputs and outputs keep theirs, a ``layout_transform`` at each end, so the library is called
as before. The weights are constants, and their transposes are folded into new constants when
the module is converted, not left to run with the network.

The packaged cost model, its pre-fitted XGB and the donors of transplants learnt NCHW programs:
for other layouts they rank and transplant from what they learnt of other loops, and under the
default's budgets ResNet-50 builds slower so (bench/README.md, *Are convolutions easier to tune
in NHWC?* and *Convolutions blocked by 16 channels*); the layout is off unless asked for.
"""

from __future__ import annotations

from typing import Any

# The layouts ``conv_layout`` takes: each one's (activation, weight) layout for relax's
# ConvertLayout.
CONV_LAYOUTS = {
    "NHWC": ("NHWC", "OHWI"),
    "NCHW16c": ("NCHW16c", "OIHW16o"),
    "NCHW8c": ("NCHW8c", "OIHW8o"),
}


def check_conv_layout(layout: str | None) -> None:
    """Raises ValueError unless ``layout`` is None (as imported) or one of CONV_LAYOUTS."""
    if layout is not None and layout not in CONV_LAYOUTS:
        raise ValueError(
            f"unknown convolution layout {layout!r}: choose one of {', '.join(CONV_LAYOUTS)}"
        )


def with_conv_layout(mod: Any, layout: str | None) -> Any:
    """``mod`` (a relax IRModule, its weights bound) with every 2-D convolution in ``layout``
    and the constants this leaves folded; ``mod`` itself where ``layout`` is None."""
    check_conv_layout(layout)
    if layout is None:
        return mod
    import tvm
    from tvm import relax

    blocked = len(layout) > 4
    converted = tvm.transform.Sequential(
        [
            relax.transform.ConvertLayout({"relax.nn.conv2d": list(CONV_LAYOUTS[layout])}),
            relax.transform.FoldConstant(),
        ]
    )(clips_as_bounds(mod) if blocked else mod)
    return legalize_blocked_convs(converted) if blocked else converted


def clips_as_bounds(mod: Any) -> Any:
    """``mod`` with every ``relax.clip`` (ReLU6) written as a maximum and a minimum with
    scalar constants: relax lays those out like their input, a clip it would return to the
    layout the network was imported in, with a transform before and after each."""
    from tvm import relax
    from tvm.ir import Op

    clip = Op.get("relax.clip")

    @relax.expr_functor.mutator
    class Rewriter(relax.PyExprMutator):  # type: ignore[misc]
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            if call.op != clip:
                return call
            x, low, high = call.args
            dtype = x.ty.dtype
            floor = relax.op.maximum(x, relax.const(float(low.value), dtype))
            return relax.op.minimum(floor, relax.const(float(high.value), dtype))

    return rewritten(mod, Rewriter(mod))


def rewritten(mod: Any, mutator: Any) -> Any:
    """``mod`` with each of its relax functions passed through ``mutator``, a
    ``PyExprMutator`` built on ``mod``, and the functions it added."""
    from tvm import relax

    for gvar, func in mod.functions_items():
        if isinstance(func, relax.Function):
            mutator.builder_.update_func(gvar, mutator.visit_expr(func))
    return mutator.builder_.get()


def legalize_blocked_convs(mod: Any) -> Any:
    """``mod`` with every channel-blocked ``relax.nn.conv2d`` (5-D activations) replaced by a
    call of :func:`conv2d_nchwc`: relax's own legalization takes 4-D layouts only."""
    from tvm import relax
    from tvm.ir import Op

    conv2d = Op.get("relax.nn.conv2d")

    @relax.expr_functor.mutator
    class Legalizer(relax.PyExprMutator):  # type: ignore[misc]
        def visit_call_(self, call: Any) -> Any:
            call = super().visit_call_(call)
            if call.op != conv2d or len(call.attrs.data_layout) == 4:
                return call
            attrs = call.attrs
            lanes = str(attrs.data_layout)[4:-1]  # NCHW16c: 16
            if attrs.out_layout != attrs.data_layout or attrs.kernel_layout != f"OIHW{lanes}o":
                raise ValueError(
                    f"a convolution of {attrs.data_layout} to {attrs.out_layout} with "
                    f"{attrs.kernel_layout} weights: only NCHW[x]c to itself with OIHW[x]o"
                )
            out_dtype = str(attrs.out_dtype)
            return self.builder_.call_te(
                conv2d_nchwc,
                call.args[0],
                call.args[1],
                [int(x) for x in attrs.strides],
                [int(x) for x in attrs.padding],
                [int(x) for x in attrs.dilation],
                int(attrs.groups),
                out_dtype if out_dtype not in ("", "void") else call.args[0].ty.dtype,
                primfunc_name_hint="conv2d_NCHWc",
            )

    return rewritten(mod, Legalizer(mod))


def conv2d_nchwc(
    data: Any,
    kernel: Any,
    strides: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
    out_dtype: str,
) -> Any:
    """TE compute of a convolution of NCHW[x]c activations with OIHW[x]o weights to NCHW[x]c.
    The output's channel lanes are innermost in both the output and the weights, so a schedule
    vectorizes them against one broadcast input. Without groups the input channels are
    reduced as (block, lane), as the layout stores them; a depthwise convolution reads the
    same lanes it writes."""
    from tvm import te, topi

    batch, in_blocks, height, width, lanes = (int(d) for d in data.shape)
    out_blocks, per_group, kh, kw, out_lanes = (int(d) for d in kernel.shape)
    top, left, bottom, right = padding
    out_h = (height + top + bottom - (kh - 1) * dilation[0] - 1) // strides[0] + 1
    out_w = (width + left + right - (kw - 1) * dilation[1] - 1) // strides[1] + 1
    padded = (
        topi.nn.pad(data, (0, 0, top, left, 0), (0, 0, bottom, right, 0), name="data_pad")
        if any(padding)
        else data
    )
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")

    def at(n: Any, block: Any, y: Any, x: Any, lane: Any) -> Any:
        row, col = y * strides[0] + ry * dilation[0], x * strides[1] + rx * dilation[1]
        return padded[n, block, row, col, lane].astype(out_dtype)

    shape = (batch, out_blocks, out_h, out_w, out_lanes)
    if groups == 1:
        rc = te.reduce_axis((0, in_blocks), name="rc")
        ri = te.reduce_axis((0, lanes), name="ri")
        return te.compute(
            shape,
            lambda n, oc, y, x, o: te.sum(
                at(n, rc, y, x, ri) * kernel[oc, rc * lanes + ri, ry, rx, o].astype(out_dtype),
                axis=[rc, ry, rx, ri],
            ),
            name="conv2d_NCHWc",
        )
    if per_group == 1 and groups == in_blocks * lanes == out_blocks * out_lanes:
        return te.compute(
            shape,
            lambda n, oc, y, x, o: te.sum(
                at(n, oc, y, x, o) * kernel[oc, 0, ry, rx, o].astype(out_dtype), axis=[ry, rx]
            ),
            name="depthwise_conv2d_NCHWc",
        )
    per_out_group = out_blocks * out_lanes // groups
    rg = te.reduce_axis((0, per_group), name="rg")

    def grouped(n: Any, oc: Any, y: Any, x: Any, o: Any) -> Any:
        channel = (oc * out_lanes + o) // per_out_group * per_group + rg
        value = at(n, channel // lanes, y, x, channel % lanes)
        return te.sum(value * kernel[oc, rg, ry, rx, o].astype(out_dtype), axis=[rg, ry, rx])

    return te.compute(shape, grouped, name="group_conv2d_NCHWc")
