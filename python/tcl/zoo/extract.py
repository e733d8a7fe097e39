"""torch -> torch.export -> relax -> fused TIR -> MetaSchedule tasks.

``extract_tasks`` on a raw import finds nothing: MetaSchedule only collects fused TIR functions,
so the fusion prefix of ``compile_relax`` runs first, in the same order, so that the tasks'
structural hashes match what ``compile_relax`` later looks up in a tuning database.
"""

from __future__ import annotations

import ast
import contextlib
import io
import sys
import warnings
from dataclasses import dataclass
from typing import Any

from tcl.errors import TclError
from tcl.integrations.tvm.patches import enters_tvm


@dataclass
class Task:
    """One tuning task of a network.

    Attributes
    ----------
    name : str
        MetaSchedule's task name (the fused function, e.g. ``fused_conv2d_add_relu``).
    weight : int
        How many times the network calls it.
    flops : float
        Floating-point operations of one call (TVM's estimate, fused epilogue included).
    mod : tvm.IRModule
        The TIR module to tune.
    """

    name: str
    weight: int
    flops: float
    mod: Any


def export_program(model: Any, inputs: Any) -> Any:
    """``torch.export`` of ``model`` on ``inputs`` (one tensor or a tuple of them)."""
    import torch

    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    with torch.no_grad(), warnings.catch_warnings():
        # torch 2.13's own export code trips its pytree deprecation (LeafSpec); not ours to fix.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        # an exported program's module is in inference form already (and refuses eval())
        module = model if isinstance(model, torch.fx.GraphModule) else model.eval()
        said = io.StringIO()  # torch prints the partial graph of a failed export to stderr
        try:
            with contextlib.redirect_stderr(said), _causal_hints_as_given():
                exported = torch.export.export(module, args)
        except Exception as err:  # torch's own, hundreds of lines: one line for a user
            raise _export_error(err) from err
        sys.stderr.write(said.getvalue())  # what it said on the way (warnings) stays said
        return exported


@contextlib.contextmanager
def _causal_hints_as_given() -> Any:
    """``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` given an attention mask but no
    ``is_causal`` compare the mask with a causal one (``_detect_is_causal_mask``, a
    ``torch.equal``), which ``torch.export`` cannot trace: its outcome depends on the mask's
    values. The outcome is only a hint that picks PyTorch's attention kernel, and the mask is
    applied either way, so while exporting the hint is taken as the caller gave it (not causal
    where not given)."""
    from torch.nn.modules import transformer

    detect = transformer._detect_is_causal_mask

    def as_given(mask: Any, is_causal: bool | None = None, size: int | None = None) -> bool:
        return bool(is_causal)

    transformer._detect_is_causal_mask = as_given
    try:
        yield
    finally:
        transformer._detect_is_causal_mask = detect


def _export_error(err: Exception) -> TclError:
    """One line on why ``torch.export`` failed: the first line of its error, and the line of
    the model's code that raised it where torch names one."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    what = f"{type(err).__name__}: {lines[0] if lines else ''}"
    call = "The following call raised this error:"
    if call in lines and len(lines) > lines.index(call) + 2:
        where, code = lines[lines.index(call) + 1 : lines.index(call) + 3]
        what += f" ({where.removeprefix('File ')}: {code})"
    return TclError(f"torch.export cannot export the model: {what}")


@enters_tvm
def import_program(exported: Any) -> Any:
    """A relax module of an exported program, the weights bound as constants and batch norm
    decomposed; the operators TVM's importer gets wrong or lacks converted by
    :mod:`tcl.integrations.tvm.aten`."""
    import torch
    from tvm import relax
    from tvm.relax.frontend import detach_params
    from tvm.relax.frontend.torch import from_exported_program

    from tcl.integrations.tvm import aten

    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        try:
            mod = from_exported_program(
                aten.decomposed(exported),
                keep_params_as_input=True,
                custom_convert_map=aten.converters(),
                run_ep_decomposition=False,
            )
        except TclError:
            raise
        except Exception as err:  # TVM's own, many kinds and many lines: one line for a user
            raise _import_error(err) from err
    mod, params = detach_params(mod)
    main = mod["main"]
    n_inputs = int(main.attrs["num_input"])
    if params.get("main"):
        mod = relax.transform.BindParams(
            "main", dict(zip(main.params[n_inputs:], params["main"], strict=True))
        )(mod)
    return for_inference(mod)


def _import_error(err: Exception) -> TclError:
    """One line on why TVM's importer failed: the operators it has no converter for (its own
    check, an assertion), else its error's last line."""
    text = str(err)
    if isinstance(err, AssertionError) and "Unsupported function types" in text:
        missing = ast.literal_eval(text.split("Unsupported function types", 1)[1].strip())
        return TclError(
            "the network uses operators that TVM's PyTorch importer cannot convert: "
            + ", ".join(f"aten.{name}" for name in missing)
        )
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    return TclError(f"TVM's PyTorch importer failed on the network: {type(err).__name__}: {last}")


def for_inference(mod: Any) -> Any:
    """``mod`` with batch norm and training-only operators decomposed for inference, and the
    arithmetic this leaves on constants folded (:func:`tcl.zoo.constants.fold_constants`)."""
    import tvm
    from tvm import relax

    from tcl.zoo.constants import fold_constants

    return fold_constants(
        tvm.transform.Sequential(
            [relax.transform.DecomposeOpsForInference(), relax.transform.CanonicalizeBindings()]
        )(mod)
    )


def import_network(model: Any, inputs: Any) -> Any:
    """A relax module of ``model`` exported on ``inputs``."""
    return import_program(export_program(model, inputs))


def fuse(mod: Any, target: Any, *, weight_prepack: bool = False) -> Any:
    """``compile_relax``'s fusion prefix: what MetaSchedule's task extraction expects; with
    ``weight_prepack``, the fused kernels' constant arguments marked layout-free
    (:mod:`tcl.tuning.compile`)."""
    import tvm
    from tvm import relax

    with target:
        passes = [
            *relax.pipeline.library_dispatch_passes(target),
            relax.transform.LegalizeOps(),
            relax.transform.AnnotateTIROpPattern(),
            relax.transform.FoldConstant(),
            relax.transform.FuseOps(),
            relax.transform.FuseTIR(),
        ]
        if weight_prepack:
            passes.append(relax.transform.AttachAttrLayoutFreeBuffers())
        return tvm.transform.Sequential(passes)(mod)


def extracted_tasks(
    mod: Any, target: Any, *, include_zero_flop: bool = False, weight_prepack: bool = False
) -> list[Any]:
    """MetaSchedule's ``ExtractedTask`` list of a bound relax module. Zero-FLOP tasks (reshapes,
    transposes) still cost trials when tuned and teach a cost model little: left out by default."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.analysis import estimate_tir_flops

    return [
        t
        for t in ms.relax_integration.extract_tasks(
            fuse(mod, target, weight_prepack=weight_prepack), target
        )
        if include_zero_flop or float(estimate_tir_flops(t.dispatched[0])) > 0
    ]


@enters_tvm
def tasks_of(mod: Any, target: Any, *, include_zero_flop: bool = False) -> list[Task]:
    """The tasks of :func:`extracted_tasks` with their weights and FLOPs."""
    from tvm.s_tir.analysis import estimate_tir_flops

    return [
        Task(
            str(t.task_name),
            int(t.weight),
            float(estimate_tir_flops(t.dispatched[0])),
            t.dispatched[0],
        )
        for t in extracted_tasks(mod, target, include_zero_flop=include_zero_flop)
    ]
