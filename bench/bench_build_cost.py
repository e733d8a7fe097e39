"""How long a program takes to build, by how far it unrolls its loops.

MetaSchedule draws each block's explicit unroll step from 0, 16, 64 and 512 on a CPU, and what
LLVM compiles grows with it. This builds random programs of a zoo network's tasks (the kind a
quick first round picks from) one at a time through the tuner's builder
(``tcl.integrations.tvm.measure.PersistentLocalBuilder``, one worker), times each build, and
groups them by their unroll step (``tcl.integrations.tvm.build_cost.unroll_step``): the
programs within a bound (``--bound``, 64 by default, as ``tcl tune --first-round-unroll``)
against those past it, in the same run.

Prints one JSON line: per unroll step, the programs, their median and total build seconds and
the share of all the build time; the median build past the bound over the median within it;
the machine.

Usage: taskset -c 1 python bench/bench_build_cost.py [--network resnet50] [--programs 2]
       [--bound 64] [--platform cpu-native-1t]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict

from _common import machine

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.build_cost import unroll_step
from tcl.tuning import platforms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--programs", type=int, default=2, help="random programs a task")
    parser.add_argument("--bound", type=int, default=64)
    parser.add_argument("--platform", default="cpu-native-1t")
    args = parser.parse_args()

    target = platforms.get(args.platform).tvm_target()
    tasks = zoo.extract(args.network, target)
    candidates = [
        c
        for i, t in enumerate(tasks)
        for c in tm.random_candidates(t.mod, target, args.programs, i)
    ]
    seconds: dict[int, list[float]] = defaultdict(list)
    builder = tm.PersistentLocalBuilder(max_workers=1)
    try:
        for job in builder.start():
            job.result()
        for candidate in candidates:
            start = time.perf_counter()
            batch = tm.build(builder, [candidate], target)
            took = time.perf_counter() - start
            tm.cleanup(batch)
            if not batch.failures:
                seconds[unroll_step(candidate.sch.trace)].append(took)
    finally:
        tm.shutdown(builder)
    total = sum(sum(s) for s in seconds.values())
    within = [s for step, ss in seconds.items() if step <= args.bound for s in ss]
    past = [s for step, ss in seconds.items() if step > args.bound for s in ss]
    print(
        json.dumps(
            {
                "bench": "build_cost",
                "network": args.network,
                "platform": args.platform,
                "tasks": len(tasks),
                "programs": sum(len(s) for s in seconds.values()),
                "failed": len(candidates) - sum(len(s) for s in seconds.values()),
                "by_unroll_step": {
                    str(step): {
                        "programs": len(ss),
                        "median_s": round(statistics.median(ss), 3),
                        "total_s": round(sum(ss), 2),
                        "share_of_build_time": round(sum(ss) / total, 3),
                    }
                    for step, ss in sorted(seconds.items())
                },
                "bound": args.bound,
                "past_over_within_median": (
                    round(statistics.median(past) / statistics.median(within), 2)
                    if past and within
                    else None
                ),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
