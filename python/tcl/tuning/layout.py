"""The data layout a network's 2-D convolutions are tuned and built in.

A network exported from PyTorch convolves NCHW activations with OIHW weights. With
``conv_layout="NHWC"`` every ``relax.nn.conv2d`` is rewritten to NHWC activations and OHWI
weights (relax's ``ConvertLayout``): channels become the innermost, contiguous axis, the one
MetaSchedule's CPU rules vectorize, as TVM's CPU tuning tutorials lay convolutions out. The
operators between two convolutions follow the new layout where they can; the network's inputs
and outputs keep theirs, a ``layout_transform`` at each end, so the library is called as before.
The weights are constants, and their transposes are folded into new constants when the module
is converted, not left to run with the network.

The packaged cost model, its pre-fitted XGB and the donors of transplants learnt NCHW programs:
for NHWC tasks they rank and transplant from what they learnt of other loops, and under the
default's 2-minute budget ResNet-50 builds 1.8-1.9x slower so (bench/README.md, *Are
convolutions easier to tune in NHWC?*); the layout is off unless asked for.
"""

from __future__ import annotations

from typing import Any

# The layouts ``conv_layout`` takes: each one's (activation, weight) layout for relax's
# ConvertLayout.
CONV_LAYOUTS = {"NHWC": ("NHWC", "OHWI")}


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

    return tvm.transform.Sequential(
        [
            relax.transform.ConvertLayout({"relax.nn.conv2d": list(CONV_LAYOUTS[layout])}),
            relax.transform.FoldConstant(),
        ]
    )(mod)
