"""Would a lower LLVM optimisation level make a tuner's builds cheaper, and at what cost?

Half of a short tuning run's time on a CPU is its builds, and most of a build is LLVM's (its
optimisation passes and its machine code: ``bench_build_cost.py --phases``). The LLVM target
takes an ``opt-level`` (0-3; TVM's default is 3). This builds the programs of a tuning run's
database (``--database``: a ``tcl tune`` work directory or a committed store; ``--sample N`` of
them at random, as ``bench_build_cost.py --database`` draws them) through the tuner's builder
(one worker) at each level of ``--levels``, runs each build once through the tuner's runner
(``SyncRunner``, the rounds' timing: 3 repeats of at least 20 ms), and does it all twice, the
levels interleaved (3 2 1 0 3 2 1 0).

Prints one JSON line: per level and pass, the build seconds (in all and the median) and each
program's run time against the first pass at the first level (the median and the geometric mean
of the ratios, and their range), and the build seconds by the programs' unroll step. The first
level's second pass against its first is the measurement's own spread, the figure the other
levels' ratios are read against.

Usage: taskset -c 1 python bench/bench_opt_level.py --database DIR [--sample 40]
       [--levels 3,2,1,0] [--platform cpu-native-1t]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from _common import machine
from bench_build_cost import database_candidates

from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.build_cost import unroll_step
from tcl.tuning import platforms


def build_and_run(
    candidates: list[Any], targets: dict[int, Any], passes: int
) -> list[dict[str, Any]]:
    """Each candidate built alone at each level of ``targets`` and run once, the levels in
    turn, ``passes`` times: per pass and level, the build seconds and the mean run seconds of
    each candidate (None where it failed)."""
    from tcl.integrations.tvm.sync_runner import SyncRunner
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    builder, inner = measurement_workers(tm, MeasureProtocol(build_workers=1), threads=1)
    runner = SyncRunner(inner)  # the rounds' timing
    out = []
    try:
        for job in builder.start():  # the build worker up before the first build is timed
            job.result()
        for number in range(passes):
            for level, target in targets.items():
                builds, runs = [], []
                for candidate in candidates:
                    start = time.perf_counter()
                    batch = tm.build(builder, [candidate], target)
                    builds.append(time.perf_counter() - start)
                    measured = tm.run(runner, batch).get(0)
                    ok = measured is not None and measured.run_secs
                    runs.append(statistics.mean(measured.run_secs) if ok else None)
                    tm.cleanup(batch)
                out.append({"pass": number, "level": level, "builds": builds, "runs": runs})
    finally:
        tm.shutdown(builder, inner)
    return out


def summary(passes: list[dict[str, Any]], steps: list[int]) -> list[dict[str, Any]]:
    """Per pass: the build seconds (also by the programs' unroll ``steps``), and the run times
    against the first pass's."""
    first = passes[0]["runs"]
    rows = []
    for p in passes:
        ratios = [b / a for a, b in zip(first, p["runs"], strict=True) if a and b]
        by_step: dict[str, float] = {}
        for step, took in zip(steps, p["builds"], strict=True):
            by_step[str(step)] = by_step.get(str(step), 0.0) + took
        rows.append(
            {
                "pass": p["pass"],
                "opt_level": p["level"],
                "build_s": round(sum(p["builds"]), 2),
                "build_median_s": round(statistics.median(p["builds"]), 3),
                "build_s_by_unroll": {k: round(v, 2) for k, v in sorted(by_step.items())},
                "failed": sum(r is None for r in p["runs"]),
                "run_against_first": {
                    "median": round(statistics.median(ratios), 3),
                    "geomean": round(math.exp(statistics.mean(map(math.log, ratios))), 3),
                    "range": [round(min(ratios), 2), round(max(ratios), 2)],
                },
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=40, help="of the database's programs")
    parser.add_argument("--levels", default="3,2,1,0", help="LLVM optimisation levels, in turn")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--platform", default="cpu-native-1t")
    args = parser.parse_args()
    target = platforms.get(args.platform).tvm_target()
    levels = [int(x) for x in args.levels.split(",")]
    drawn = database_candidates(args.database, target, args.sample)
    candidates = [candidate for candidate, _ in drawn]
    steps = [unroll_step(c.sch.trace) for c in candidates]
    passes = build_and_run(
        candidates, {lv: tm.at_opt_level(target, lv) for lv in levels}, args.passes
    )
    print(
        json.dumps(
            {
                "bench": "opt_level",
                "database": args.database.name,
                "platform": args.platform,
                "programs": len(candidates),
                "programs_by_unroll": {str(k): steps.count(k) for k in sorted(set(steps))},
                "passes": summary(passes, steps),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
