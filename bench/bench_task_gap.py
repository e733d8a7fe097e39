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

RUN_B may also be a committed store or pool (``bench/pools/<platform>/search``: its files
gzipped), the programs of many runs of the network: ``--best-of 1,2,4,8`` then also gives the
network's estimate where each task's best were the best of K programs drawn at random from run
B's (its expected value, exact, over B's programs that ran; a task B lacks counts run A's
best): how many of the programs a tuner draws near the good ones run A's picks are worth.
``--within-unroll N`` adds the same estimates over only B's programs that unroll their loops
by at most N steps (``tcl.integrations.tvm.build_cost.unroll_step``; the costliest builds past
it), and the unroll step of each task's best program in B: what a search that left out the
costliest builds would give up. Each run's ``records_by_unroll`` counts its records by their
unroll step.

It measures nothing: the records are the runs' own (their mean costs as the tuner measured
them), and the network's tasks are extracted here for their weights, as the run extracted them.

Usage: python bench/bench_task_gap.py RUN_A RUN_B --network resnet50
[--platform cpu-native-1t] [--seconds-a 240] [--seconds-b SECONDS] [--best-of 1,2,4,8]
[--within-unroll 64] [--reach 0.01]
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _common import database_text, machine, tuned_as

from tcl import zoo
from tcl.integrations.tvm.build_cost import UNROLL_PRAGMA
from tcl.records.store import RECORDS, WORKLOADS
from tcl.tuning import platforms
from tcl.tuning.allot import FAILED_COST


def records_within(work: Path, seconds: float | None) -> tuple[int, float | None]:
    """How many of ``work``'s records had been measured after ``seconds`` of tuning (its
    report's curve: the trial count of its last point within them; all records when ``seconds``
    is None), and the tuner's seconds at that point."""
    lines = sum(1 for _ in database_text(work, RECORDS).splitlines())
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


def record_seconds(work: Path, count: int) -> list[float | None]:
    """The tuning seconds after which each of ``work``'s first ``count`` records had been
    measured: its report's first curve point that counts it (None past the curve's last, and
    for a store or pool, which has no report)."""
    report = work / "report.json"
    curve = json.loads(report.read_text())["curve"] if report.exists() else []
    out: list[float | None] = []
    point = 0
    for index in range(count):
        while point < len(curve) and curve[point]["trial"] < index + 1:
            point += 1
        out.append(float(curve[point]["seconds"]) if point < len(curve) else None)
    return out


def reached(run: dict[str, Any], key: str, target: float) -> tuple[float | None, int] | None:
    """When ``run``'s best program of the task ``key`` first cost at most ``target`` (s): the
    tuning seconds and how many of the task's programs it had measured by then (None: never)."""
    programs = 0
    for (k, cost, _), at in zip(run["stored"], run["seconds_of"], strict=True):
        if k != key:
            continue
        programs += 1
        if ran(cost) and cost <= target:
            return at, programs
    return None


def stored_records(work: Path, count: int) -> list[tuple[str, float, int]]:
    """``work``'s first ``count`` records (the database's, in the order they were committed),
    each as its workload key, its mean cost (s; infinite where it did not run) and its unroll
    step (:func:`unroll_of`)."""
    from tcl.integrations.tvm.search import mean_secs

    keys = [json.loads(line)[0] for line in database_text(work, WORKLOADS).splitlines()]
    out = []
    for line in database_text(work, RECORDS).splitlines()[:count]:
        workload, record = json.loads(line)
        cost = mean_secs(record[1]) if record[1] else math.inf
        out.append((keys[workload], cost, unroll_of(record[0][0])))
    return out


def ran(cost: float) -> bool:
    """Whether a stored mean cost is a program's that ran (not MetaSchedule's failure cost)."""
    return 0 < cost < FAILED_COST


def task_costs(
    records: list[tuple[str, float, int]], most_unroll: int | None = None
) -> tuple[dict[str, list[float]], dict[str, int]]:
    """Per workload key, the mean costs (s) of the ``records`` (:func:`stored_records`) that
    ran (where ``most_unroll`` is given, only those that unroll by at most that many steps),
    and how many of those records are of it, failed ones too."""
    costs: dict[str, list[float]] = defaultdict(list)
    measured: dict[str, int] = defaultdict(int)
    for key, cost, step in records:
        if most_unroll is not None and step > most_unroll:
            continue
        measured[key] += 1
        if ran(cost):
            costs[key].append(cost)
    return dict(costs), dict(measured)


def unroll_of(insts: list[Any]) -> int:
    """The largest explicit unroll step of a stored trace's instructions (its JSON form):
    ``build_cost.unroll_step`` without parsing the trace."""
    steps = [
        inst[1][1]
        for inst in insts
        if inst[0] == "Annotate" and inst[2] == [UNROLL_PRAGMA] and isinstance(inst[1][1], int)
    ]
    return max(steps, default=0)


def expected_best_of(costs: list[float], k: int) -> float:
    """The expected least of ``k`` of ``costs`` drawn at random without replacement (all of
    them where there are no more): the i-th least is the least drawn with probability
    C(n - 1 - i, k - 1) / C(n, k)."""
    ordered, n = sorted(costs), len(costs)
    k = min(k, n)
    return sum(c * math.comb(n - 1 - i, k - 1) for i, c in enumerate(ordered)) / math.comb(n, k)


def param_shapes(mod: Any) -> list[tuple[int, ...]]:
    """The shapes of the parameters of a task's PrimFunc (``mod["main"]``), in order."""
    return [tuple(int(d) for d in p.shape) for p in mod["main"].params]


def network_tasks(network: str, platform: Any, work: Path) -> list[dict[str, Any]]:
    """The network's tuned tasks (name, weight, workload key, and the shapes of the task's
    PrimFunc parameters, in order) as ``work``'s run extracted them."""
    from tcl.integrations.tvm.measure import workload_key
    from tcl.tuning.compile import as_tuned
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    options = tuned_as(work)
    mod = as_tuned(import_network(zoo.module(net, example), example), options)
    return [
        {
            "task": str(t.task_name),
            "weight": int(t.weight),
            "key": workload_key(t.dispatched[0]),
            "param_shapes": param_shapes(t.dispatched[0]),
        }
        for t in extracted_tasks(mod, platform.tvm_target(), weight_prepack=options.weight_prepack)
    ]


def best_of_estimates(
    tasks: list[dict[str, Any]], costs: dict[str, list[float]], fallback: dict[str, float], ks: str
) -> dict[str, float]:
    """Per K of ``ks`` ("1,2,4"), the network's estimate (ms) where each task's best is the
    best of K of its programs in ``costs`` drawn at random (expected); a task with none there
    counts its ``fallback`` (run A's best), NaN where neither has it."""
    out = {}
    for k in (int(k) for k in ks.split(",") if k):
        total = sum(
            t["weight"]
            * (
                expected_best_of(costs[t["key"]], k)
                if costs.get(t["key"])
                else fallback.get(t["key"], math.nan)
            )
            for t in tasks
        )
        out[str(k)] = round(total * 1e3, 4)
    return out


def within_unroll(
    args: argparse.Namespace, tasks: list[dict[str, Any]], runs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Run B's best and best-of-K estimates over its programs within ``--within-unroll``, and
    how many tasks' best program in B unrolls by each step."""
    records = runs["b"]["stored"]
    within, _ = task_costs(records, args.within_unroll)
    best = {key: min(c) for key, c in within.items()}
    estimate = sum(t["weight"] * best.get(t["key"], math.nan) for t in tasks)
    fastest: dict[str, tuple[float, int]] = {}  # per workload key: its best cost, its unroll
    for key, cost, step in records:
        if ran(cost) and cost < fastest.get(key, (math.inf,))[0]:
            fastest[key] = (cost, step)
    steps: dict[str, int] = defaultdict(int)
    for t in tasks:
        if t["key"] in fastest:
            steps[str(fastest[t["key"]][1])] += 1
    return {
        "within_unroll": args.within_unroll,
        "estimate_ms_b_within_unroll": round(estimate * 1e3, 4),
        "estimate_ms_of_b_best_of_within_unroll": best_of_estimates(
            tasks, within, runs["a"]["best"], args.best_of
        ),
        "tasks_of_b_by_unroll_of_best": dict(sorted(steps.items(), key=lambda kv: int(kv[0]))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--network", required=True)
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--seconds-a", type=float, help="run A after this much tuning")
    parser.add_argument("--seconds-b", type=float, help="run B after this much tuning")
    parser.add_argument(
        "--best-of", default="", help="K,K,...: the estimate from K random programs of run B's"
    )
    parser.add_argument(
        "--reach",
        type=float,
        help="also when each run's best of a task first came within a factor 1 + R of B's",
    )
    parser.add_argument(
        "--within-unroll",
        type=int,
        help="also those estimates from run B's programs that unroll by at most this many steps",
    )
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
        stored = stored_records(work, count)
        costs, measured = task_costs(stored)
        steps = Counter(step for _, _, step in stored)
        runs[name] = {
            "dir": str(work),
            "records": count,
            "seconds": at,
            "records_by_unroll": {str(step): steps[step] for step in sorted(steps)},
            "stored": stored,
            "seconds_of": record_seconds(work, count),
            "best": {key: min(c) for key, c in costs.items()},
            "costs": costs,
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
        best_b = runs["b"]["best"].get(t["key"])
        if args.reach is not None and best_b is not None:
            for n in runs:
                rows[-1][f"reached_{n}"] = reached(runs[n], t["key"], best_b * (1 + args.reach))
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
            n: {
                k: v
                for k, v in run.items()
                if k in ("dir", "records", "seconds", "records_by_unroll")
            }
            for n, run in runs.items()
        },
        "estimate_ms": {n: round(v, 4) for n, v in total.items()},
        "gap_ms": round(total["a"] - total["b"], 4),
        "gap_by_programs_of_a": dict(sorted(by_programs.items(), key=lambda kv: int(kv[0]))),
        "estimate_ms_of_b_best_of": best_of_estimates(
            tasks, runs["b"]["costs"], runs["a"]["best"], args.best_of
        ),
        "tasks_b_lacks": sum(1 for t in tasks if not runs["b"]["costs"].get(t["key"])),
        **(within_unroll(args, tasks, runs) if args.within_unroll is not None else {}),
        "tasks": rows,
        "platform": platform.to_dict(),
        "machine": machine(),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
