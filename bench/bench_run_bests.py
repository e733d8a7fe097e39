"""Do a run's best programs carry over to its network's other tasks?

``tcl tune --share-best K`` (:mod:`tcl.integrations.tvm.siblings`) measures, in each full
round of a task, up to K of the other tasks' best programs so far replayed on it. This asks
whether that can pay: for a finished tuning work directory (bench_tune's
``OUT/<network>-<model>-s<seed>``, or any ``tcl tune`` work directory), the best program of
each task, replayed on each of the network's other tasks of the same blocks (the heaviest
``--tasks``, weight x FLOPs) and measured there in one batch with the task's own best
measured again beside them. Prints one JSON line per task: its own best (ms, as measured
now), and each donor task's replay: ms, the ratio to the task's own best, and the share of
the donor's tile decisions the task's loops kept.

    taskset -c 1 python bench/bench_run_bests.py OUT/bert_tiny-xgb-s0 --network bert_tiny \\
        --platform cpu-native-1t --tasks 8
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _common import machine, open_store

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.search import mean_secs
from tcl.integrations.tvm.transplant import Donor, best_records, transplanted
from tcl.tuning import platforms
from tcl.tuning.collect import MeasureProtocol, measurement_workers


def task_row(task: Any, own: Any, donors: dict[str, Donor], target: Any, workers: Any) -> dict:
    """``task``'s own best (``own``, a tuning record) and each donor's replay, measured."""
    context = tm.replay_context(task.mod, target)
    context.generate_design_space()  # sets the task's postprocessors
    postprocs = list(context.space_generator.postprocs)
    grafts = {name: transplanted(task.mod, postprocs, [d]) for name, d in donors.items()}
    grafts = {name: found[0] for name, found in grafts.items() if found}
    candidates = [own.as_measure_candidate()] + [g.candidate for g in grafts.values()]
    measured, _ = tm.measure(*workers, candidates, target)
    ms = [mean_secs(m.run_secs) * 1e3 if m.run_secs else float("inf") for m in measured]
    return {
        "task": task.name,
        "weight": task.weight,
        "own_best_ms": round(ms[0], 4),
        "replays": {
            name: {"ms": round(v, 4), "ratio": round(v / ms[0], 3), "kept": round(g.kept, 3)}
            for (name, g), v in zip(grafts.items(), ms[1:], strict=True)
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="a tuning work directory")
    parser.add_argument("--network", required=True)
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--tasks", type=int, default=8, help="heaviest tasks (weight x FLOPs)")
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    tasks = sorted(zoo.extract(args.network, target), key=lambda t: -t.weight * t.flops)
    workers = measurement_workers(tm, MeasureProtocol.of(platform), platform.threads)
    print(json.dumps({"bench": "run_bests", "machine": machine(), "platform": platform.name}))
    try:
        with tempfile.TemporaryDirectory(prefix="tcl-run-bests-") as scratch:
            best = best_records(open_store(args.work, Path(scratch)))
            named = {tm.workload_key(t.mod): t for t in tasks}
            donors = {
                named[key].name: Donor.of(record.trace, record.workload.mod)
                for key, record in best.items()
                if key in named
            }
            for task in tasks[: args.tasks]:
                own = best.get(tm.workload_key(task.mod))
                if own is None:
                    continue
                others = {name: d for name, d in donors.items() if name != task.name}
                print(json.dumps(task_row(task, own, others, target, workers)), flush=True)
    finally:
        tm.shutdown(*workers)


if __name__ == "__main__":
    main()
