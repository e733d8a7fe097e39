"""Where a built network's time goes, against the tuner's estimate of it.

The tuner's estimate is the sum over tuned tasks of weight x best measured cost; the built
network also runs the tasks the tuner leaves out (zero-FLOP reshapes, transposes and copies,
which ``tcl tune`` does not tune) and the relax VM between kernels. For one tuning work
directory this times, in this process, every task's kernel as the network runs it (the
database's best schedule, or TVM's default for a task without records), alone, on arguments of
its shapes (ones; integer arguments zeros, a valid index), the median of 5 repeats of >= 50 ms;
then the whole network under the fresh-process protocol. Prints one JSON line: the estimate,
the sum of the tuned kernels timed here, the sum of the untuned ones, the built network, the
rest (built - kernels: the VM and what the kernels do differently inside the network), and per
task its weight, FLOPs, measured cost and time here.

The rest is then split by running the built network in this process with every call of the relax
VM timed (``VirtualMachine.set_instrument``): the kernels as the network runs them (their
weights and activations no longer in cache from a previous call of the same kernel), the VM's
builtins (allocation, views, copies), and what neither accounts for (the VM's own dispatch,
and the instrument's). Per task it adds the time inside the network beside the time alone.

For a run tuned with exact math, the same database's network built with fast math
(``tcl.tuning.fast_math``) is timed beside it.

Usage: python bench/bench_gap.py WORK_DIR [--network bert_tiny] [--platform cpu-avx2-1t]
(``--network`` names the model as ``tcl tune`` did: a zoo network, a ``.pt2`` or ``.onnx``
file, or ``FILE.py:FUNCTION``). On a 1-thread platform, run it pinned to one core
(`taskset -c 1 python ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine, tuned_as

from tcl.integrations.tvm.measure import device_kind
from tcl.tuning import platforms
from tcl.tuning.isolated import time_in_processes
from tcl.tuning.latency import build_library


def kernel_ms(mod: Any, target: Any, database: Any) -> tuple[float, bool]:
    """(ms, tuned): the task's kernel with the database's best schedule, or as TVM builds an
    unscheduled task (the loops as written)."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    sch = ms.tir_integration.compile_tir(database, mod, target)
    # With pre-packed weights the build transforms them once, not per call: as MetaSchedule's
    # builder does, the kernel is timed without its weight-rewrite block, on arguments of its
    # own signature (the weights already in their rewritten layout).
    without_rewrite = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)
    kernel = mod if sch is None else without_rewrite(sch.mod)
    lib = tvm.compile(kernel, target=target).jit()
    device = tvm.cpu()
    args = []
    for info in ms.arg_info.ArgInfo.from_prim_func(kernel["main"]):
        shape, dtype = [int(d) for d in info.shape], str(info.dtype)
        fill = np.zeros if "int" in dtype else np.ones
        args.append(tvm.runtime.tensor(fill(shape, dtype=dtype), device))
    evaluate = lib.time_evaluator("main", device, number=1, repeat=5, min_repeat_ms=50)
    return float(evaluate(*args).median) * 1e3, sch is not None


def inside_network(library: Path, inputs: list[np.ndarray], rounds: int = 5) -> dict[str, Any]:
    """The built ``library`` run ``rounds`` times (after a warm-up) with each VM call timed:
    per callee, its time per network run (median over rounds), and the run's total."""
    import tvm
    from tvm import relax

    device = tvm.cpu()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(library)), device)
    tensors = [tvm.runtime.tensor(x, device) for x in inputs]
    spent: dict[str, float] = defaultdict(float)
    started: list[float] = []

    def instrument(func: Any, symbol: str, before: bool, ret: Any, *args: Any) -> int:
        now = time.perf_counter()
        if before:
            started.append(now)
        else:
            spent[str(symbol)] += now - started.pop()
        return 0  # VMInstrumentReturnKind.NO_OP: run the call

    vm["main"](*tensors)  # warm-up
    vm.set_instrument(instrument)
    per_round: list[dict[str, float]] = []
    totals = []
    for _ in range(rounds):
        spent.clear()
        begin = time.perf_counter()
        vm["main"](*tensors)
        totals.append(time.perf_counter() - begin)
        per_round.append(dict(spent))
    symbols = sorted({s for r in per_round for s in r})
    calls = {s: float(np.median([r.get(s, 0.0) for r in per_round])) * 1e3 for s in symbols}
    return {"calls_ms": calls, "instrumented_total_ms": float(np.median(totals)) * 1e3}


def is_builtin(symbol: str) -> bool:
    """A relax VM builtin (allocation, shape and view handling, copies), not a compiled kernel:
    builtins are registered functions with dotted names (``vm.builtin.alloc_tensor``), kernels
    the network's PrimFuncs, whose names have no dot."""
    return "." in symbol


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("work_dir", type=Path)
    parser.add_argument(
        "--network",
        default="bert_tiny",
        help="the model as tcl tune names it: a zoo network, a .pt2 or .onnx file or "
        "FILE.py:FUNCTION",
    )
    parser.add_argument("--platform", default="cpu-avx2-1t")
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    os.environ["TVM_NUM_THREADS"] = str(platform.threads)
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.analysis import estimate_tir_flops

    from tcl.tuning.compile import as_tuned
    from tcl.tuning.fast_math import fast_math
    from tcl.tuning.latency import eager_timing
    from tcl.tuning.user_models import load_model
    from tcl.zoo.extract import extracted_tasks

    model = load_model(args.network)  # as tcl tune loads it: a zoo network, a file, a function
    inputs = [x.numpy() for x in model.inputs]
    mod = model.relax_module()
    tuned = tuned_as(args.work_dir)
    fast, packed = not tuned.exact_math, tuned.weight_prepack
    mod = as_tuned(mod, tuned)  # the network as the run tuned it
    target = platform.tvm_target()
    database = ms.database.JSONDatabase(work_dir=str(args.work_dir))
    tasks = []
    for task in extracted_tasks(mod, target, include_zero_flop=True, weight_prepack=packed):
        mod_task = task.dispatched[0]
        record = database.query_tuning_record(mod_task, target, str(task.task_name))
        measured = float(np.mean([float(s) for s in record.run_secs])) * 1e3 if record else None
        ms_here, tuned = kernel_ms(mod_task, target, database)
        tasks.append(
            {
                "task": str(task.task_name),
                "weight": int(task.weight),
                "flops": float(estimate_tir_flops(task.dispatched[0])),
                "tuned": tuned,
                "measured_ms": round(measured, 5) if measured is not None else None,
                "here_ms": round(ms_here, 5),
            }
        )
    builds = {"built": mod}
    if not fast:  # what fast math alone does to the same database's network
        builds["built_fast_math"] = fast_math(mod)
    with tempfile.TemporaryDirectory() as scratch:
        libraries = {
            label: build_library(
                args.work_dir, network, target, Path(scratch) / f"{label}.so", weight_prepack=packed
            )
            for label, network in builds.items()
        }
        device = device_kind(target)
        timings, load = time_in_processes(
            libraries,
            inputs,
            threads=platform.threads,
            **eager_timing(model, platform.threads, device),
            device=device,
        )
        inside = inside_network(libraries["built"], inputs)
    kernels_inside = {s: v for s, v in inside["calls_ms"].items() if not is_builtin(s)}
    builtins_inside = {s: v for s, v in inside["calls_ms"].items() if is_builtin(s)}
    for t in tasks:
        # None: no kernel of that name runs (a reshape runs as a VM builtin)
        inside_ms = kernels_inside.get(t["task"])
        t["inside_ms"] = round(inside_ms, 5) if inside_ms is not None else None
    estimate = sum(t["weight"] * t["measured_ms"] for t in tasks if t["measured_ms"] is not None)
    tuned_here = sum(t["weight"] * t["here_ms"] for t in tasks if t["tuned"])
    untuned_here = sum(t["weight"] * t["here_ms"] for t in tasks if not t["tuned"])
    built_ms = timings["built"].median
    print(
        json.dumps(
            {
                "benchmark": "estimate_vs_built",
                "network": args.network,
                "work_dir": str(args.work_dir),
                "fast_math": fast,
                "estimate_ms": round(estimate, 4),
                "tuned_kernels_here_ms": round(tuned_here, 4),
                "untuned_kernels_here_ms": round(untuned_here, 4),
                "built_ms": round(built_ms, 4),
                "built_range_ms": [round(timings["built"].low, 4), round(timings["built"].high, 4)],
                "torch_ms": round(timings["torch"].median, 4) if "torch" in timings else None,
                "built_fast_math_ms": round(timings["built_fast_math"].median, 4)
                if "built_fast_math" in timings
                else None,
                "rest_ms": round(built_ms - tuned_here - untuned_here, 4),
                "inside": {
                    "kernels_ms": round(sum(kernels_inside.values()), 4),
                    "builtins_ms": round(sum(builtins_inside.values()), 4),
                    "instrumented_total_ms": round(inside["instrumented_total_ms"], 4),
                    "unmatched_kernels": sorted(set(kernels_inside) - {t["task"] for t in tasks}),
                    "builtins": {s: round(v, 4) for s, v in builtins_inside.items()},
                },
                "tasks": sorted(tasks, key=lambda t: -t["weight"] * t["here_ms"]),
                "machine_load": load.other_cores,
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
