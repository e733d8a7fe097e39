"""Are a network's convolutions easier to tune in another layout than the NCHW PyTorch exports?

For the ``--tasks`` heaviest convolution tasks of a network (weight x FLOPs), each tuned in
each of ``--layouts`` (``tcl.tuning.layout``; NCHW and NHWC unless told), in that order, by a
stock MetaSchedule search of ``--trials`` programs (``tcl.integrations.tvm.measure.tune_tir``:
this machine's builder and runner, 3 repeats a program). ``--cost-model random`` measures what
random programs reach (what a quick round picks among), ``xgb`` what an XGB from nothing finds. Per
task and layout: the best, first-quartile and median program (ms); in all, each layout's best
weighted by the network's calls, and NCHW's over each other layout's. Run it pinned to one
core on a quiet machine.

Usage: taskset -c 1 python bench/bench_layout.py --network resnet50 [--tasks 4]
       [--trials 32] [--per-round 32] [--cost-model random|xgb] [--seed 0]
       [--layouts NCHW,NHWC,NCHW16c]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

import numpy as np
from _common import machine

from tcl.tuning.layout import CONV_LAYOUTS


def heaviest_tasks(network: str, layout: str | None, count: int, target: Any) -> list[Any]:
    """The ``count`` heaviest tasks of the zoo's ``network`` with its convolutions in
    ``layout``, as ``tcl tune`` extracts them (fast math)."""
    from tvm.s_tir.analysis import estimate_tir_flops

    from tcl import zoo
    from tcl.tuning.compile import as_tuned
    from tcl.tuning.options import TuneOptions
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    imported = import_network(zoo.module(net, example), example)
    mod = as_tuned(imported, TuneOptions(conv_layout=layout))
    tasks = [t for t in extracted_tasks(mod, target) if "conv2d" in t.task_name]
    tasks.sort(key=lambda t: -float(estimate_tir_flops(t.dispatched[0])) * t.weight)
    return tasks[:count]


def measured_ms(task: Any, target: Any, args: argparse.Namespace) -> np.ndarray:
    """The mean run time (ms) of every program a stock search of ``task`` measured."""
    from tcl.integrations.tvm.measure import tune_tir

    with tempfile.TemporaryDirectory(prefix="tcl-layout-") as work:
        database = tune_tir(
            task.dispatched[0],
            target,
            work,
            args.trials,
            per_iter=args.per_round,
            population=64,
            cost_model=args.cost_model,
            seed=args.seed,
        )
        costs = [
            float(np.mean([float(s) for s in r.run_secs]))
            for r in database.get_all_tuning_records()
            if r.run_secs
        ]
    return np.sort(np.array(costs)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--per-round", type=int, default=32)
    parser.add_argument("--cost-model", choices=("random", "xgb"), default="random")
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--layouts",
        default="NCHW,NHWC",
        help=f"comma-separated: NCHW (as exported), {', '.join(CONV_LAYOUTS)}",
    )
    args = parser.parse_args()
    from tcl.tuning import platforms

    target = platforms.get(args.platform).tvm_target()
    layouts = [None if x == "NCHW" else x for x in args.layouts.split(",")]
    if None not in layouts:
        parser.error("--layouts must include NCHW, the layout the others are compared with")
    tasks = {layout: heaviest_tasks(args.network, layout, args.tasks, target) for layout in layouts}
    rows, weighted = [], {x or "NCHW": 0.0 for x in layouts}
    for i in range(args.tasks):
        for layout in layouts:
            task, name = tasks[layout][i], layout or "NCHW"
            began = time.time()
            ms = measured_ms(task, target, args)
            weighted[name] += task.weight * float(ms[0])
            row = {
                "task": i,
                "name": task.task_name,
                "layout": name,
                "weight": task.weight,
                "programs": len(ms),
                "best_ms": round(float(ms[0]), 4),
                "p25_ms": round(float(np.percentile(ms, 25)), 4),
                "median_ms": round(float(np.median(ms)), 4),
                "seconds": round(time.time() - began, 1),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    print(
        json.dumps(
            {
                "benchmark": "layout",
                "network": args.network,
                "platform": args.platform,
                "cost_model": args.cost_model,
                "trials_per_task": args.trials,
                "per_round": args.per_round,
                "seed": args.seed,
                "weighted_best_ms": {k: round(v, 3) for k, v in weighted.items()},
                "nchw_over": {
                    k: round(weighted["NCHW"] / v, 3) for k, v in weighted.items() if k != "NCHW"
                },
                "tasks": rows,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
