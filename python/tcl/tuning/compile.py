"""Building a network from a MetaSchedule database, with its weights optionally pre-packed.

Without pre-packing this is stock ``compile_relax``'s passes (on a CPU, the layout transforms
of blocked convolutions are given a schedule before lowering). With it (``weight_prepack``),
the fused PrimFuncs mark their constant arguments (the weights) as layout-free before tasks are
extracted, so that MetaSchedule's ``RewriteLayout`` postprocessor lets each schedule read its
weights in the order its tiles walk them; after the database is applied, each weight's layout
transform is split out of its kernel and folded into a new constant at build time. The deployed
library takes the same inputs and runs no transform. This is apache-tvm's
``cpu_weight_prepack`` (relax's ``static_shape_tuning`` pipeline) for modules whose weights are
bound as constants, as tcl's imports are: nothing is lifted into a separate
``transform_params`` function.

Tasks extracted with pre-packing are other workloads (their PrimFuncs carry the layout-free
attribute): a database tuned one way builds nothing the other way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcl.tuning.options import TuneOptions


def as_tuned(mod: Any, options: TuneOptions) -> Any:
    """``mod`` (a relax IRModule, its weights bound, as imported) as ``options`` tune and build
    it: its convolutions in ``conv_layout`` (:mod:`tcl.tuning.layout`), then with TVM's fast
    math unless ``exact_math`` (:mod:`tcl.tuning.fast_math`). In that order: fast math writes
    a sigmoid or a GELU as a call of its own PrimFunc, which relax's layout conversion cannot
    see into and so surrounds with layout transforms (on EfficientNet-B0, four times the
    elements moved). A run's tasks, its build, and every later rebuild of its database start
    from this module (a run's report keeps its options): built from another, the database
    holds none of its workloads."""
    from tcl.tuning.fast_math import fast_math
    from tcl.tuning.layout import with_conv_layout

    converted = with_conv_layout(mod, options.conv_layout)
    return converted if options.exact_math else fast_math(converted)


def compile_tuned(database: Any, mod: Any, target: Any, *, weight_prepack: bool = False) -> Any:
    """``mod`` (bound weights) built with the best programs of ``database``: a relax VM
    executable. ``weight_prepack`` as the database's tasks were extracted
    (:func:`tcl.zoo.extract.extracted_tasks`). On a CPU the layout transforms of blocked
    convolutions, which no task tunes, are scheduled before lowering
    (:func:`tcl.tuning.layout.scheduled_layout_transforms`)."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.layout import scheduled_layout_transforms

    cpu = target.kind.name == "llvm"
    if not cpu and not weight_prepack:
        return ms.relax_integration.compile_relax(database, mod, target, params=None)

    @tvm.transform.module_pass(opt_level=3)  # type: ignore[untyped-decorator]
    def pipeline(mod: Any, _ctx: Any) -> Any:
        fused = applied(database, mod, target, weight_prepack=weight_prepack)
        if cpu:
            fused = scheduled_layout_transforms(fused, target)
        return tvm.transform.Sequential(lowering(target))(fused)

    with target, database, tvm.transform.PassContext(opt_level=3):
        return relax.build(mod, target=target, relax_pipeline=pipeline)


def applied(database: Any, mod: Any, target: Any, *, weight_prepack: bool = False) -> Any:
    """``mod`` fused as its tasks were extracted and the database's programs applied; with
    ``weight_prepack``, fused with layout-free weights, and every weight's layout transform
    split out of its kernel and folded into a constant."""
    import tvm
    from tvm import relax

    from tcl.zoo.extract import fuse

    with target, database, tvm.transform.PassContext(opt_level=3):  # the passes take the target
        passes = [relax.transform.MetaScheduleApplyDatabase()]
        if weight_prepack:
            passes += [relax.transform.SplitLayoutRewritePreproc(), relax.transform.FoldConstant()]
        return tvm.transform.Sequential(passes)(fuse(mod, target, weight_prepack=weight_prepack))


def lowering(target: Any) -> list[Any]:
    """relax's passes after fusion for ``target`` (``compile_relax``'s; for llvm they live in
    the CPU backend, which ``relax.pipeline``'s dispatch does not reach in this apache-tvm)."""
    from tvm import relax

    if target.kind.name == "llvm":
        from tvm.relax.backend.cpu_generic import pipeline as cpu

        return [*cpu.dataflow_lower_passes(target), *cpu.finalize_passes(target)]
    return [
        *relax.pipeline.dataflow_lower_passes(target),
        *relax.pipeline.finalize_passes(target),
    ]


__all__ = ["applied", "compile_tuned"]
