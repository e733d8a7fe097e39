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

A ``layout_transform`` has no arithmetic, so it is no tuning task and no tuned program exists
for it: at build time :func:`scheduled_layout_transforms` gives each one into a blocked layout
a fixed schedule (the channel lanes innermost and vectorized), several times faster than the
loop nest relax legalizes it to, which reads in the input's order and stores 16 floats apart.

``conv_layout="NCHW"`` leaves the convolutions as the network was imported. A run that names
no layout takes its platform's (:func:`default_conv_layout`): NCHW16c on a CPU with AVX-512,
where tcl packages a cost model and donor programs learnt in it (:mod:`tcl.model`,
:mod:`tcl.integrations.tvm.transplant`), NCHW anywhere else (bench/README.md, *Blocked
convolutions by default on AVX-512*). The other layouts are tuned with the NCHW model and donors,
which know their loops less well (*Are convolutions easier to tune in NHWC?*).
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


# The layout a network exported from PyTorch is imported in: its convolutions left as they are.
AS_IMPORTED = "NCHW"

# The layout of a CPU with AVX-512 when a run names none.
AVX512_CONV_LAYOUT = "NCHW16c"


def check_conv_layout(layout: str | None) -> None:
    """Raises ValueError unless ``layout`` is None (the platform's, or as imported where no
    platform is known), AS_IMPORTED or one of CONV_LAYOUTS."""
    if layout is not None and layout != AS_IMPORTED and layout not in CONV_LAYOUTS:
        raise ValueError(
            f"unknown convolution layout {layout!r}: choose one of "
            f"{', '.join([AS_IMPORTED, *CONV_LAYOUTS])}"
        )


def default_conv_layout(target: dict[str, Any]) -> str:
    """The layout a run on ``target`` (a TVM target's JSON dict) takes when it names none:
    AVX512_CONV_LAYOUT on a CPU whose vectors are 512 bits wide, else AS_IMPORTED."""
    from tcl.tuning.platforms import simd_width

    if target.get("kind") == "llvm" and simd_width(target) == 512:
        return AVX512_CONV_LAYOUT
    return AS_IMPORTED


def converted_to(layout: str | None) -> str | None:
    """The layout ``layout`` converts the convolutions to: None for None and AS_IMPORTED."""
    return None if layout == AS_IMPORTED else layout


def with_conv_layout(mod: Any, layout: str | None) -> Any:
    """``mod`` (a relax IRModule, its weights bound) with every 2-D convolution in ``layout``
    and the constants this leaves folded; ``mod`` itself where ``layout`` is None or
    AS_IMPORTED, or where it has no 2-D convolution (a transformer is built as it was)."""
    check_conv_layout(layout)
    layout = converted_to(layout)
    if layout is None or not has_conv2d(mod):
        return mod
    from tvm import relax

    from tcl.zoo.constants import fold_constants

    blocked = len(layout) > 4
    converted = relax.transform.ConvertLayout({"relax.nn.conv2d": list(CONV_LAYOUTS[layout])})(
        clips_as_bounds(mod) if blocked else mod
    )
    # the weights' transforms folded with numpy, then whatever else is constant
    folded = relax.transform.FoldConstant()(fold_constants(converted))
    return legalize_blocked_convs(folded) if blocked else folded


def has_conv2d(mod: Any) -> bool:
    """Whether a relax function of ``mod`` calls ``relax.nn.conv2d``."""
    from tvm import relax
    from tvm.ir import Op

    conv2d = Op.get("relax.nn.conv2d")
    calls: list[bool] = []
    for _, func in mod.functions_items():
        if isinstance(func, relax.Function):
            relax.analysis.post_order_visit(
                func.body, lambda e: calls.append(isinstance(e, relax.Call) and e.op == conv2d)
            )
    return any(calls)


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


def scheduled_layout_transforms(mod: Any, target: Any) -> Any:
    """``mod`` (fused, its tuned programs applied) with each standalone ``layout_transform`` of
    NCHW activations into NCHW[x]c (:func:`blocked_transform_schedule`) scheduled for the CPU
    ``target``; every other function as it was. Only schedule primitives rewrite them, so the
    values they produce are unchanged."""
    from tvm import tirx

    threads = int(target.attrs.get("num-cores", 1))
    updates = {}
    for gvar, func in mod.functions_items():
        if isinstance(func, tirx.PrimFunc):
            scheduled = blocked_transform_schedule(func, threads)
            if scheduled is not None:
                updates[gvar] = scheduled
    if not updates:
        return mod
    scheduled = mod.clone()  # the pass's input is left as it came
    for gvar, func in updates.items():
        scheduled[gvar] = func
    return scheduled


def blocked_transform_schedule(func: Any, threads: int) -> Any | None:
    """``func`` scheduled if it is a lone ``layout_transform`` of ``(N, C, H, W)`` into
    ``(N, C / x, H, W, x)``, else None. As legalized it walks the input in order and stores
    each element ``x`` floats from the last; split by the block and reordered, it stores whole
    vectors of lanes, gathering them from ``x`` rows that the next ``x`` pixels read again
    (the reverse transform reads its input in order and is left as it is). With ``threads``
    above one the outer loops run in parallel."""
    from tvm import s_tir

    if len(func.params) != 2:
        return None
    source, blocked = (tuple(int(d) for d in p.shape) for p in func.params)
    if len(source) != 4 or len(blocked) != 5:
        return None
    n, c, h, w = source
    lanes = blocked[4]
    if blocked != (n, c // lanes, h, w, lanes) or c % lanes:
        return None
    sch = s_tir.Schedule(func)
    try:
        loops = sch.get_loops(sch.get_sblock("te_layout_transform"))
        if len(loops) != 4:
            return None
        batch, channel, row, col = loops
        block, lane = sch.split(channel, [None, lanes])
        sch.reorder(batch, block, row, col, lane)
        sch.vectorize(lane)
        if threads > 1:
            sch.parallel(sch.fuse(batch, block, row))
    except s_tir.ScheduleError:  # not the loop nest relax legalizes a layout_transform to
        return None
    return sch.mod["main"]
