"""What preparing a network costs before tuning and after it, with its constant arithmetic folded
by numpy (tcl.zoo.constants, the default) and left to relax's FoldConstant (each call compiled
by LLVM and run), side by side in one process.

Per network and way, interleaved (A B B A ...): the seconds of ``network_tasks`` (the PyTorch
import, batch norm decomposed, fast math, fusion and task extraction: what `tcl tune` does before
its first search) and of building the network from an empty database (``compile_tuned``: the
relax pipeline the tuned network goes through, here with no tuned kernel). Both ways start from
the same exported program and weights, and the benchmark checks that they extract the same
workloads (structural hashes and weights).

Prints one JSON line: per network and way, the median and range of each phase, the ratio of the
medians, whether the tasks are the same, the machine.

Usage: taskset -c 1 python bench/bench_import.py [--networks resnet50,mobilenet_v2,bert_tiny]
       [--repeats 2] [--platform cpu-native-1t]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from typing import Any

from _common import machine

from tcl.tuning import platforms

WAYS = ("numpy fold", "FoldConstant alone")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--networks", default="resnet50,mobilenet_v2,bert_tiny")
    parser.add_argument("--repeats", type=int, default=2, help="of each way, interleaved")
    parser.add_argument("--platform", default="cpu-native-1t")
    args = parser.parse_args()

    from tcl.integrations.tvm.patches import patch_inspect_stack
    from tcl.tuning.user_models import load_model
    from tcl.zoo.extract import export_program

    patch_inspect_stack()
    target = platforms.get(args.platform).tvm_target()
    results = {}
    for network in args.networks.split(","):
        model = load_model(network)
        model.program = model.program or export_program(model.module, model.inputs)
        order = [WAYS[(r + (r // 2)) % 2] for r in range(2 * args.repeats)]  # A B B A A B ...
        seconds: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        workloads: dict[str, dict[str, float]] = {}
        for way in order:
            prepare, build, workloads[way] = _timed(model, target, folded=way == WAYS[0])
            seconds[way]["network_tasks"].append(prepare)
            seconds[way]["untuned build"].append(build)
        results[network] = {
            "tasks": len(workloads[WAYS[0]]),
            "same_tasks": workloads[WAYS[0]] == workloads[WAYS[1]],
            "seconds": {
                way: {
                    phase: {"median": round(statistics.median(v), 2), "range": _range(v)}
                    for phase, v in phases.items()
                }
                for way, phases in seconds.items()
            },
            "ratio": {
                phase: round(
                    statistics.median(seconds[WAYS[1]][phase])
                    / statistics.median(seconds[WAYS[0]][phase]),
                    2,
                )
                for phase in seconds[WAYS[0]]
            },
        }
    print(
        json.dumps(
            {
                "benchmark": "import",
                "platform": args.platform,
                "repeats": args.repeats,
                "ways": list(WAYS),
                "networks": results,
                "machine": machine(),
            }
        )
    )


def _timed(model: Any, target: Any, *, folded: bool) -> tuple[float, float, dict[str, float]]:
    """Seconds of ``network_tasks`` and of the untuned build, and the tasks' weights by
    workload (``task_weights``), with the numpy fold on or off."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.compile import compile_tuned
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune import network_tasks, task_weights
    from tcl.zoo import constants

    fold = constants.fold_constants
    if not folded:
        constants.fold_constants = lambda mod: mod
    try:
        start = time.perf_counter()
        mod, tasks = network_tasks(model, target, TuneOptions())
        prepared = time.perf_counter()
        compile_tuned(ms.database.MemoryDatabase(), mod, target)
        built = time.perf_counter()
    finally:
        constants.fold_constants = fold
    return prepared - start, built - prepared, task_weights(tasks)


def _range(values: list[float]) -> list[float]:
    return [round(min(values), 2), round(max(values), 2)]


if __name__ == "__main__":
    main()
