"""Where one tuning run's network still trails another's: which tasks hold the gap.

bench_tune says when a run's build reaches another's (e.g. XGB's 1,024-trial build); this says
what holds it back before then. For two tuning work directories (bench_tune's
``OUT/<network>-<model>-s<seed>``, or any ``tcl tune`` work directory), each database as it stood
after ``--seconds-a`` / ``--seconds-b`` of tuning (its report's curve maps the seconds to a
record count; default: all of it): per task, the best measured mean cost, x the task's weight
(how often the network runs it), and how many programs the run had measured of it. The sum is
the tuner's estimate of the network. The tasks are sorted by how much of the gap each holds,
and the JSON line also groups the gap by how many programs run A had measured of a task, which
separates tasks that were searched and still trail from tasks that had not had their turn.

It measures nothing: the records are the runs' own (their mean costs as the tuner measured
them), and the network's tasks are extracted here for their weights, as the run extracted them.

Usage: python bench/bench_task_gap.py RUN_A RUN_B --network resnet50
[--platform cpu-native-1t] [--seconds-a 240] [--seconds-b SECONDS]
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import machine, tuned_as

from tcl import zoo
from tcl.records.store import RECORDS, WORKLOADS
from tcl.tuning import platforms
from tcl.tuning.allot import FAILED_COST


def records_within(work: Path, seconds: float | None) -> tuple[int, float | None]:
    """How many of ``work``'s records had been measured after ``seconds`` of tuning (its
    report's curve: the trial count of its last point within them; all records when ``seconds``
    is None), and the tuner's seconds at that point."""
    lines = sum(1 for _ in (work / RECORDS).open())
    if seconds is None:
        return lines, None
    curve = json.loads((work / "report.json").read_text())["curve"]
    within = [p for p in curve if p["seconds"] <= seconds]
    if not within:
        raise SystemExit(
            f"{work}: no estimate within {seconds:g} s (its first is at {curve[0]['seconds']} s)"
            if curve
            else f"{work}: an empty curve"
        )
    return int(within[-1]["trial"]), float(within[-1]["seconds"])


def best_costs(work: Path, count: int) -> tuple[dict[str, float], dict[str, int]]:
    """Per workload key, the best mean cost (s) among ``work``'s first ``count`` records and
    how many of them measured it (the database's records, in the order they were committed)."""
    from tcl.integrations.tvm.search import mean_secs

    keys = [json.loads(line)[0] for line in (work / WORKLOADS).open()]
    best: dict[str, float] = {}
    measured: dict[str, int] = defaultdict(int)
    with (work / RECORDS).open() as f:
        for n, line in enumerate(f):
            if n >= count:
                break
            workload, record = json.loads(line)
            key = keys[workload]
            measured[key] += 1
            cost = mean_secs(record[1]) if record[1] else math.inf
            if 0 < cost < min(FAILED_COST, best.get(key, math.inf)):
                best[key] = cost
    return best, dict(measured)


def network_tasks(network: str, platform: Any, work: Path) -> list[dict[str, Any]]:
    """The network's tuned tasks (name, weight, workload key) as ``work``'s run extracted them."""
    from tcl.integrations.tvm.measure import workload_key
    from tcl.tuning.compile import as_tuned
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    options = tuned_as(work)
    mod = as_tuned(import_network(zoo.module(net, example), example), options)
    return [
        {"task": str(t.task_name), "weight": int(t.weight), "key": workload_key(t.dispatched[0])}
        for t in extracted_tasks(mod, platform.tvm_target(), weight_prepack=options.weight_prepack)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--network", required=True)
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--seconds-a", type=float, help="run A after this much tuning")
    parser.add_argument("--seconds-b", type=float, help="run B after this much tuning")
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    os.environ["TVM_NUM_THREADS"] = str(platform.threads)
    tasks = network_tasks(args.network, platform, args.run_a)
    runs: dict[str, dict[str, Any]] = {}
    for name, work, seconds in (
        ("a", args.run_a, args.seconds_a),
        ("b", args.run_b, args.seconds_b),
    ):
        count, at = records_within(work, seconds)
        best, measured = best_costs(work, count)
        runs[name] = {
            "dir": str(work),
            "records": count,
            "seconds": at,
            "best": best,
            "measured": measured,
        }
    rows = []
    for t in tasks:
        ms = {n: runs[n]["best"].get(t["key"], math.nan) * 1e3 * t["weight"] for n in runs}
        rows.append(
            {
                "task": t["task"],
                "weight": t["weight"],
                "programs_a": runs["a"]["measured"].get(t["key"], 0),
                "programs_b": runs["b"]["measured"].get(t["key"], 0),
                "weighted_ms_a": round(ms["a"], 4),
                "weighted_ms_b": round(ms["b"], 4),
                "gap_ms": round(ms["a"] - ms["b"], 4),
            }
        )
    rows.sort(key=lambda r: -r["gap_ms"] if math.isfinite(r["gap_ms"]) else math.inf)
    total = {n: sum(r[f"weighted_ms_{n}"] for r in rows) for n in runs}
    by_programs: dict[str, dict[str, float]] = defaultdict(lambda: {"tasks": 0, "gap_ms": 0.0})
    for r in rows:
        group = by_programs[str(r["programs_a"])]
        group["tasks"] += 1
        group["gap_ms"] = round(group["gap_ms"] + r["gap_ms"], 4)
    out = {
        "network": args.network,
        "runs": {
            n: {k: v for k, v in run.items() if k not in ("best", "measured")}
            for n, run in runs.items()
        },
        "estimate_ms": {n: round(v, 4) for n, v in total.items()},
        "gap_ms": round(total["a"] - total["b"], 4),
        "gap_by_programs_of_a": dict(sorted(by_programs.items(), key=lambda kv: int(kv[0]))),
        "tasks": rows,
        "platform": platform.to_dict(),
        "machine": machine(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
