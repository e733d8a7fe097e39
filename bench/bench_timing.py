"""Does a build's latency depend on the process that times it? The same builds of one network
timed in the process that compiled them, in that process again after it compiled other builds,
and under tcl's protocol (``tcl.tuning.isolated``: fresh processes, shuffled order) twice.

Builds come from tuning work directories (MetaSchedule databases, e.g. two of bench_tune's
runs). In-process timings are interleaved rounds (one timing of each build per round, the
median of 5 repeats of >= 50 ms each, as ``tcl.tuning.timing.tvm_timer``), in both orders.
Prints one JSON line: per method, each build's median and range, and the ratio of the first
build to the second, so that a ranking the process swaps shows as a ratio crossing 1.

Usage: python bench/bench_timing.py WORK_DIR WORK_DIR [--network bert_tiny]
       [--platform cpu-avx2-1t] [--rounds 5] [--out bench/out/timing]
On a 1-thread platform, run it pinned to one core (`taskset -c 1 python ...`).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from _common import machine, tuned_as

from tcl import zoo
from tcl.tuning import platforms
from tcl.tuning.isolated import time_in_processes
from tcl.tuning.timing import Timing, interleaved, tvm_timer

ROOT = Path(__file__).resolve().parent.parent


def figures(timings: dict[str, Timing], labels: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        k: {"median": round(t.median, 4), "range": [round(t.low, 4), round(t.high, 4)]}
        for k, t in timings.items()
    }
    out["ratio_first_to_second"] = round(timings[labels[0]].median / timings[labels[1]].median, 4)
    return out


def in_process(vms: dict[str, Any], tensors: list[Any], rounds: int) -> dict[str, Timing]:
    import tvm

    timers = {label: tvm_timer(vm, tvm.cpu(), tensors) for label, vm in vms.items()}
    return interleaved(timers, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("work_dirs", nargs=2, type=Path)
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--platform", default="cpu-avx2-1t")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "timing")
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    os.environ["TVM_NUM_THREADS"] = str(platform.threads)
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.compile import as_tuned, compile_tuned
    from tcl.zoo.extract import import_network

    net = zoo.get(args.network)
    example = zoo.example_input(net)
    mod = import_network(zoo.module(net, example), example)
    target = platform.tvm_target()
    args.out.mkdir(parents=True, exist_ok=True)
    labels = [f"{i}:{w.name}" for i, w in enumerate(args.work_dirs)]
    libraries, vms = {}, {}
    for label, work in zip(labels, args.work_dirs, strict=True):
        tuned = tuned_as(work)
        network = as_tuned(mod, tuned)  # the network as the run tuned it
        database = ms.database.JSONDatabase(work_dir=str(work))
        built = compile_tuned(database, network, target, weight_prepack=tuned.weight_prepack)
        libraries[label] = args.out / f"{label.replace(':', '-')}.so"
        built.export_library(str(libraries[label]))
        vms[label] = relax.VirtualMachine(built, tvm.cpu())  # compiled here, kept in memory
    tensors = [tvm.runtime.tensor(example.numpy(), tvm.cpu())]
    methods: dict[str, Any] = {}
    methods["in the compiling process"] = figures(in_process(vms, tensors, args.rounds), labels)
    reverse = dict(reversed(list(vms.items())))
    methods["same, reverse order"] = figures(in_process(reverse, tensors, args.rounds), labels)
    for _ in range(2):  # state a long-lived process accumulates: more compilations
        relax.build(mod, target=target)
    methods["same, after two more builds"] = figures(in_process(vms, tensors, args.rounds), labels)
    x = [example.numpy()]
    for seed in (0, 1):
        timings, _ = time_in_processes(
            libraries, x, threads=platform.threads, processes=args.rounds, seed=seed
        )
        methods[f"fresh processes, seed {seed}"] = figures(timings, labels)
    print(
        json.dumps(
            {
                "benchmark": "timing_protocol",
                "network": args.network,
                "platform": platform.name,
                "builds": {label: str(w) for label, w in zip(labels, args.work_dirs, strict=True)},
                "rounds": args.rounds,
                "methods": methods,
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
