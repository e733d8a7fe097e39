"""A tuning run's best program of each task against its register-blocked rewrite.

``tcl tune --register-block`` measures the best program of each task's quick round rewritten to
keep a block of its output in vector registers across the reduction
(:mod:`tcl.integrations.tvm.register_block`). This asks what the rewrite is worth at the other
end of a run: each task's best program in a finished run's database (``WORK``), its rewrite,
and where ``--against DIR`` names another run of the same network (XGB's 1,024 trials, say)
that run's best program of the task, all built through the tuner's builder and measured
together by its runner (3 repeats of at least 20 ms), ``--passes`` times, each pass in a new
shuffled order, so that the host's drift between runs is out of the comparison.

Prints one JSON line: per task (the heaviest first) its name, weight and best program's time
(the median of the passes), the rewrite's and the other run's best over it; and over the
network (each task's time by its weight, summed): the run's bests, the faster of each task's
best and its rewrite, and the other run's bests; the machine. Where ``WORK`` was tuned with
``--register-block``, also what its rewrites did in the run (``in_run``, read from its database
in order: a task's rewrite is the later record with the tile decisions of its quick round's
best program rewritten): how many were measured, how many ran faster than the task's best
before them (by how much, the median and the most) and how many stayed the task's best.

Usage: taskset -c 1 python bench/bench_register_block.py WORK --network bert_tiny
       [--against XGB_WORK] [--passes 3] [--platform cpu-native-1t]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from _common import machine, open_store, records_in_order, tuned_as

from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.register_block import (
    RegisterBlock,
    before_postprocessing,
    blocked_trace,
    vector_lanes,
)
from tcl.integrations.tvm.replay import measure_candidate, replayed
from tcl.integrations.tvm.transplant import best_records
from tcl.tuning import platforms
from tcl.tuning.allot import FAILED_COST

PROGRAMS = ("best", "blocked", "against")


def bests(work: Path) -> dict[str, Any]:
    """Each task's fastest program in the database of ``work`` (a tuning run's or a store's),
    by workload key (``transplant.best_records``)."""
    with tempfile.TemporaryDirectory() as scratch:
        return best_records(open_store(work, Path(scratch)))


def candidates(
    work: Path, against: Path | None, target: Any
) -> tuple[list[Any], list[tuple[str, str]]]:
    """The programs to measure (measure candidates), and each one's (task, which of
    :data:`PROGRAMS`)."""
    from tvm.s_tir import meta_schedule as ms

    ours = bests(work)
    theirs = bests(against) if against is not None else {}
    out, labels = [], []
    for key, record in ours.items():
        mod = record.workload.mod
        context = ms.TuneContext(mod=mod, target=target, space_generator="post-order-apply")
        postprocs = list(context.space_generator.postprocs)
        blocker = RegisterBlock.of_context(context)
        replays = {"best": record}
        if key in theirs:
            replays["against"] = theirs[key]
        made = {
            which: measure_candidate(sch)
            for which, r in replays.items()
            if (sch := replayed(mod, r.trace, postprocs)) is not None
        }
        rewrite = blocker.of(record.trace) if blocker is not None else None
        if rewrite is not None:
            made["blocked"] = rewrite[1]
        for which, candidate in made.items():
            out.append(candidate)
            labels.append((key, which))
    return out, labels


def _tiles(trace: list[Any]) -> list[Any]:
    insts, decisions = trace
    return [value for i, value in decisions if insts[i][0] == "SamplePerfectTile"]


def in_run(work: Path, lanes: int, quick: int) -> dict[str, Any]:
    """What the rewrites of a ``--register-block`` run did (module docstring); ``quick``: the
    run's quick round (programs a task)."""
    by_task: dict[str, list[tuple[float, Any]]] = {}
    for workload, trace, cost in records_in_order(work):
        by_task.setdefault(workload, []).append((cost, trace))
    gains, kept = [], 0
    for runs in by_task.values():
        first = [r for r in runs[:quick] if r[0] < FAILED_COST]
        rewrite = first and blocked_trace(
            before_postprocessing(min(first, key=lambda r: r[0])[1]), lanes
        )
        if not rewrite:
            continue
        wanted = _tiles(rewrite)
        at = next((i for i in range(quick, len(runs)) if _tiles(runs[i][1]) == wanted), None)
        if at is None:
            continue
        cost = runs[at][0]
        gains.append(min(r[0] for r in runs[:at]) / cost)
        kept += cost <= min(r[0] for r in runs)
    faster = sorted(g for g in gains if g > 1.0)
    return {
        "rewrites_measured": len(gains),
        "faster_than_task_best_before": len(faster),
        "median_speed_up": round(statistics.median(faster), 3) if faster else None,
        "most_speed_up": round(faster[-1], 3) if faster else None,
        "task_best_at_end": kept,
    }


def measured(cands: list[Any], target: Any, platform: Any, passes: int) -> list[list[float]]:
    """Each candidate's mean seconds in each pass (one at a time, a new shuffled order a
    pass), through the tuner's builder and runner."""
    from tcl.integrations.tvm.sync_runner import SyncRunner
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    builder, inner = measurement_workers(tm, MeasureProtocol.of(platform), threads=1)
    runner = SyncRunner(inner)
    seconds: list[list[float]] = [[] for _ in cands]
    try:
        batch = tm.build(builder, cands, target)
        for p in range(passes):
            order = list(batch.index)
            random.Random(p).shuffle(order)
            for i in order:
                for j, m in tm.run(runner, batch, [i]).items():
                    if m.run_secs:
                        seconds[j].append(statistics.mean(m.run_secs))
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder, inner)
    return seconds


def summary(
    times: dict[str, dict[str, float]], weights: dict[str, float], names: dict[str, str]
) -> dict[str, Any]:
    """Per task (the heaviest first) and over the network, from each program's ``times`` (s,
    by task and :data:`PROGRAMS`) and the tasks' ``weights``."""
    tasks = sorted(
        (k for k in times if "best" in times[k]), key=lambda k: -weights[k] * times[k]["best"]
    )

    def network_ms(which: str, faster_of_best: bool = False) -> float | None:
        if not all(which in times[k] or faster_of_best for k in tasks):
            return None
        picked = [
            min(times[k]["best"], times[k].get(which, times[k]["best"]))
            if faster_of_best
            else times[k][which]
            for k in tasks
        ]
        return round(1e3 * sum(weights[k] * p for k, p in zip(tasks, picked, strict=True)), 4)

    rows = [
        {
            "task": names.get(k, k),
            "weight": weights[k],
            "best_us": round(times[k]["best"] * 1e6, 2),
            **{
                f"{which}_over_best": round(times[k][which] / times[k]["best"], 3)
                for which in PROGRAMS[1:]
                if which in times[k]
            },
        }
        for k in tasks
    ]
    blocked = [r["blocked_over_best"] for r in rows if "blocked_over_best" in r]
    return {
        "tasks": len(rows),
        "rewritten": len(blocked),
        "rewrite_faster": sum(r < 1.0 for r in blocked),
        "network_ms": {
            "bests": network_ms("best"),
            "faster_of_best_and_rewrite": network_ms("blocked", faster_of_best=True),
            "against_bests": network_ms("against"),
        },
        "per_task": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path, help="a tuning run's work directory")
    parser.add_argument("--network", required=True, help="the zoo network it tuned")
    parser.add_argument("--against", type=Path, help="another run of the network to measure")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--platform", default="cpu-native-1t")
    args = parser.parse_args()

    from tcl.tuning.tune import network_tasks, task_weights
    from tcl.tuning.user_models import load_model

    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    options = tuned_as(args.work)
    _, extracted = network_tasks(load_model(args.network), target, options)
    weights = task_weights(extracted)
    names = {tm.workload_key(t.dispatched[0]): t.task_name for t in extracted}
    cands, labels = candidates(args.work, args.against, target)
    times: dict[str, dict[str, float]] = {}
    seconds = measured(cands, target, platform, args.passes)
    for (key, which), secs in zip(labels, seconds, strict=True):
        if secs and key in weights:
            times.setdefault(key, {})[which] = statistics.median(secs)
    figures = {
        "bench": "register_block",
        "work": args.work.name,
        "against": args.against.name if args.against else None,
        "network": args.network,
        "platform": args.platform,
        "passes": args.passes,
        **summary(times, weights, names),
        "in_run": (
            in_run(args.work, vector_lanes(target) or 0, options.first_round)
            if options.register_block
            else None
        ),
        "machine": machine(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
