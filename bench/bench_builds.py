"""How fast the tuner's builder compiles candidates with one worker and with two.

A tuning run builds each round's candidates in a pool of persistent worker processes
(``tcl.integrations.tvm.measure.PersistentLocalBuilder``), one a core this process may use and
at least 2 (``MeasureProtocol.of``). On one core, as the benchmarks' protocol pins the tuner
(``taskset -c 1``), two workers compile in turn on it; this times the same candidates through
a pool of one worker and a pool of two, batch by batch, alternating which goes first, so that
each pair of figures saw the same machine. The candidates are random programs of the heaviest
tasks of a zoo network (ResNet-50 by default), sampled once.

Prints one JSON line: per pool, seconds a program of each batch and their median; the median of
the per-batch ratios (two workers / one) and their range; the machine.

Usage: taskset -c 1 python bench/bench_builds.py [--network resnet50] [--tasks 8]
       [--programs 40] [--batch 20] [--passes 4] [--platform cpu-native-1t]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from _common import machine

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.tuning import platforms


def timed_build(builder: Any, candidates: list[Any], target: Any) -> float:
    """Seconds a program to build ``candidates`` (every one must build)."""
    start = time.perf_counter()
    batch = tm.build(builder, candidates, target)
    seconds = time.perf_counter() - start
    if batch.failures:
        raise SystemExit(f"{len(batch.failures)} candidates did not build")
    tm.cleanup(batch)
    return seconds / len(candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--programs", type=int, default=40)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--passes", type=int, default=4)
    parser.add_argument("--platform", default="cpu-native-1t")
    args = parser.parse_args()

    target = platforms.get(args.platform).tvm_target()
    tasks = sorted(zoo.extract(args.network, target), key=lambda t: -t.flops)[: args.tasks]
    per_task = -(-args.programs // len(tasks))
    candidates = [
        c for i, t in enumerate(tasks) for c in tm.random_candidates(t.mod, target, per_task, i)
    ][: args.programs]
    batches = [candidates[i : i + args.batch] for i in range(0, len(candidates), args.batch)]
    pools = {workers: tm.PersistentLocalBuilder(max_workers=workers) for workers in (1, 2)}
    seconds: dict[int, list[float]] = {1: [], 2: []}
    try:
        for builder in pools.values():
            for job in builder.start():
                job.result()
            timed_build(builder, candidates[:2], target)  # a first build per worker, untimed
        for n in range(args.passes):
            for batch in batches:
                order = (1, 2) if n % 2 == 0 else (2, 1)
                for workers in order:
                    seconds[workers].append(timed_build(pools[workers], batch, target))
    finally:
        tm.shutdown(*pools.values())
    ratios = [two / one for one, two in zip(seconds[1], seconds[2], strict=True)]
    print(
        json.dumps(
            {
                "bench": "builds",
                "network": args.network,
                "platform": args.platform,
                "cores_usable": len(platforms.usable_cores()),
                "programs": len(candidates),
                "batches": len(seconds[1]),
                "one_worker_s_per_program": [round(s, 4) for s in seconds[1]],
                "two_workers_s_per_program": [round(s, 4) for s in seconds[2]],
                "one_worker_median_s": round(statistics.median(seconds[1]), 4),
                "two_workers_median_s": round(statistics.median(seconds[2]), 4),
                "two_over_one_median": round(statistics.median(ratios), 3),
                "two_over_one_range": [round(min(ratios), 3), round(max(ratios), 3)],
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
