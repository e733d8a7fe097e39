"""How long one CUDA candidate takes to build with each of TVM's CUDA compilers, NVRTC (its
default, through cuda-bindings) and nvcc, on the same programs in the same run.

A GPU tuning round builds every candidate it measures; the GPU runs one in milliseconds, so the
compiler sets the pace. The programs are random ones from the design spaces of a network's
heaviest tasks for the local GPU (``--platform cuda``); each is built once with each compiler,
the two in alternating order, in this process and on one core (``tvm.compile``: TIR lowering,
the host code through LLVM, the kernel through the compiler). Prints one JSON line: seconds per
build of each compiler (median and range) and their ratio, per task and pooled.

Needs an NVIDIA GPU: TVM compiles CUDA at build time only where its CUDA runtime loads.

Usage: python bench/bench_cuda_compile.py [--network bert_tiny] [--tasks 2] [--candidates 4]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from typing import Any

from _common import machine

from tcl import zoo
from tcl.tuning import platforms

COMPILERS = ("nvrtc", "nvcc")


def heaviest_tasks(network: str, target: Any, count: int) -> list[Any]:
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    tasks = extracted_tasks(import_network(zoo.module(net, example), example), target)
    return sorted(tasks, key=lambda t: -t.weight * float(_flops(t)))[:count]


def _flops(task: Any) -> float:
    from tvm.s_tir.analysis import estimate_tir_flops

    return float(estimate_tir_flops(task.dispatched[0]))


def build_seconds(mod: Any, target: Any, compiler: str) -> float:
    import tvm

    os.environ["TVM_CUDA_COMPILE_MODE"] = compiler  # read by TVM at each CUDA compile
    start = time.perf_counter()
    tvm.compile(mod, target=target)
    return time.perf_counter() - start


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": round(statistics.median(values), 4), "range": [min(values), max(values)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--platform", default="cuda")
    args = parser.parse_args()
    import tvm

    from tcl.integrations.tvm.measure import random_candidates

    platform = platforms.get(args.platform)
    target = tvm.target.Target(platform.tvm_target())
    seconds: dict[str, list[float]] = {c: [] for c in COMPILERS}
    per_task = {}
    for task in heaviest_tasks(args.network, target, args.tasks):
        mod = task.dispatched[0]
        mine: dict[str, list[float]] = {c: [] for c in COMPILERS}
        for i, candidate in enumerate(random_candidates(mod, target, args.candidates, seed=0)):
            order = COMPILERS if i % 2 == 0 else COMPILERS[::-1]
            for compiler in order:
                mine[compiler].append(build_seconds(candidate.sch.mod, target, compiler))
        per_task[task.task_name] = {c: summary(v) for c, v in mine.items() if v}
        for c in COMPILERS:
            seconds[c] += mine[c]
    os.environ.pop("TVM_CUDA_COMPILE_MODE", None)
    pooled = {c: summary(v) for c, v in seconds.items() if v}
    print(
        json.dumps(
            {
                "network": args.network,
                "builds": {c: len(v) for c, v in seconds.items()},
                "seconds_per_build": pooled,
                "nvcc_over_nvrtc": round(pooled["nvcc"]["median"] / pooled["nvrtc"]["median"], 3)
                if len(pooled) == 2
                else None,
                "per_task": per_task,
                "platform": platform.to_dict(),
                "nvcc": shutil.which("nvcc"),
                "method": "random programs of the network's heaviest tasks (FLOPs x weight), "
                "each built by tvm.compile once per compiler in alternating order, one process",
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
