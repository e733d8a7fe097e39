"""How much faster a network could have been built from what its tuning runs measured: the
headroom a cost model has over another at a budget.

Every run of one network (``bench_tune.py``'s OUT/<network>-<model>-s<seed>/, the runs tuned with
warm caches: a cold-cache run's costs are not comparable) measured its own programs; this merges
their first --trials records into one database holding, for each task, the fastest program any of
them measured ("best of runs"). It is what the runs together found in K x --trials trials: not a
bound on what a search could find, but where a single run stands against it says how much a
better pick among programs of the kind these searches generate could still gain. A cost model
that is to beat another by a factor F at --trials must build a network F times faster than the
other's; when the other is within F of the best of runs, that takes programs none of the runs
found. Per run it prints its estimate at --trials (sum over tasks of weight x best cost), its
ratio to the best of runs', how many tasks it already has within 5% of the best, the tasks where
it loses most, when its estimate first existed (every task measured once: the end of its first
round) and when it reached its own final estimate (a tuning-time comparison's target is a run's
final estimate; no run has an estimate before its first round ends).

With --time the best-of-runs network is built and timed beside every run's network at --trials
(``bench_tune.py``'s checkpoint build, WORK/at<N>.so, made here if missing) and PyTorch eager, all
under ``tcl.tuning.isolated``'s protocol (--processes fresh processes per build, shuffled order,
median and range): the same bound on built latency. Prints one JSON line.

Usage: python bench/bench_headroom.py NETWORK [--out bench/out/tune-native]
       [--platform cpu-native-1t] [--trials 1024] [--time] [--processes 5]
On a 1-thread platform, run it pinned to one core (`taskset -c 1 python ...`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from _common import machine, tuned_as
from bench_tune import checkpoint_libraries

from tcl import zoo
from tcl.tuning import platforms
from tcl.tuning.latency import build_library, time_network

FAILED_SECONDS = 1e9  # MetaSchedule records a failed build or run as 1e10 s
NEAR_BEST = 1.05  # a task "at the best" is within 5% of the best of runs


def measured(
    work: Path, trials: int
) -> tuple[dict[str, float], dict[str, tuple[int, str]], Counter[str]]:
    """A run's first ``trials`` records: per task (workload hash) the best mean cost (s) and
    that record's (trial index, database line), and the trials each task got."""
    text = (work / "database_workload.json").read_text()
    workloads = [json.loads(line)[0] for line in text.splitlines()]
    best: dict[str, float] = {}
    line_of: dict[str, tuple[int, str]] = {}
    count: Counter[str] = Counter()
    with open(work / "database_tuning_record.json") as records:
        for trial, line in zip(range(trials), records, strict=False):
            index, record = json.loads(line)
            task = workloads[index]
            count[task] += 1
            seconds = record[1] or []
            cost = sum(seconds) / len(seconds) if seconds else float("inf")
            if cost < FAILED_SECONDS and cost < best.get(task, float("inf")):
                best[task], line_of[task] = cost, (trial, json.dumps(record))
    return best, line_of, count


def merged_database(
    runs: dict[str, Path], found: dict[str, tuple[str, int, str]], dest: Path
) -> Path:
    """A MetaSchedule JSON database in ``dest`` holding one record per task: the record line of
    ``found[task]`` (run, trial index, record line)."""
    dest.mkdir(parents=True, exist_ok=True)
    workload_lines: dict[str, str] = {}
    for work in runs.values():
        for line in (work / "database_workload.json").read_text().splitlines():
            workload_lines.setdefault(json.loads(line)[0], line)
    order = sorted(found)
    (dest / "database_workload.json").write_text("".join(workload_lines[t] + "\n" for t in order))
    records = (f"[{i}, {found[t][2]}]\n" for i, t in enumerate(order))
    (dest / "database_tuning_record.json").write_text("".join(records))
    return dest


def estimate_ms(best: dict[str, float], weights: dict[str, float]) -> float | None:
    """The tuner's estimate: sum over tasks of weight x best cost; None while a task has none."""
    if any(task not in best for task in weights):
        return None
    return 1e3 * sum(w * best[task] for task, w in weights.items())


def first_estimate(curve: list[dict[str, float]]) -> dict[str, float]:
    """When a run's estimate ``curve`` began (every task measured once): trial, seconds, and the
    estimate then."""
    return {k: curve[0][k] for k in ("trial", "seconds", "estimated_ms")}


def time_to_final_estimate(curve: list[dict[str, float]]) -> float:
    """The seconds a run took to reach its own final estimate."""
    final = curve[-1]["estimated_ms"]
    return float(next(p["seconds"] for p in curve if p["estimated_ms"] <= final))


def run_figures(
    best: dict[str, float], count: Counter[str], union: dict[str, float], weights: dict[str, float]
) -> dict[str, Any]:
    """A run against the best of runs: its estimate, their ratio, tasks at the best, and the
    three tasks where it loses most (ms of the network's estimate)."""
    estimate, bound = estimate_ms(best, weights), estimate_ms(union, weights)
    # ms of the network's estimate; a task the run never measured loses most (inf, shown as None)
    loss = {t: 1e3 * w * (best.get(t, float("inf")) - union[t]) for t, w in weights.items()}
    worst = sorted(loss, key=loss.__getitem__, reverse=True)[:3]
    return {
        "estimate_ms": estimate,
        "over_best_of_runs": None if estimate is None or bound is None else estimate / bound,
        "tasks_at_best": sum(best.get(t, float("inf")) <= NEAR_BEST * union[t] for t in weights),
        "largest_losses": [
            {
                "weight": weights[t],
                "ms": loss[t] if t in best else None,
                "trials": count[t],
                "over_best": (best[t] / union[t] if t in best else None),
            }
            for t in worst
        ],
    }


def network_libraries(
    runs: dict[str, Path],
    merged: Path,
    mod: Any,
    target: Any,
    prepack: bool,
    trials: int,
    scratch: Path,
) -> dict[str, Path]:
    """Each run's network ``mod`` at ``trials`` (bench_tune's checkpoint build, WORK/at<N>.so)
    and the best-of-runs network, built as the runs tuned it (``prepack``)."""
    libraries = {
        label: next(iter(checkpoint_libraries(work, prepack, [trials], mod, target).values()))
        for label, work in runs.items()
    }
    libraries["best-of-runs"] = build_library(
        merged, mod, target, scratch / "best-of-runs.so", weight_prepack=prepack
    )
    return libraries


def comparable_runs(
    out: Path, network: str
) -> tuple[dict[str, Path], dict[str, list[dict[str, float]]], Any]:
    """The network's runs in ``out`` tuned like each other, warm caches and one setting of fast
    math, pre-packed weights and convolution layout (the first run's): their work directories,
    their estimate curves, and the first run's options (:func:`_common.tuned_as`)."""
    runs, curves = {}, {}
    for work in sorted(out.glob(f"{network}-*")):
        if not (work / "report.json").exists():
            continue
        report = json.loads((work / "report.json").read_text())
        if not report.get("cold_cache", False):
            label = work.name.removeprefix(f"{network}-")
            runs[label], curves[label] = work, report["curve"]
    if not runs:
        raise SystemExit(f"bench_headroom: no tuning run of {network} in {out}")
    tuned = {label: tuned_as(work) for label, work in runs.items()}
    built = {label: (o.exact_math, o.weight_prepack, o.conv_layout) for label, o in tuned.items()}
    first = next(iter(built))
    alike = [label for label, how in built.items() if how == built[first]]
    return {k: runs[k] for k in alike}, {k: curves[k] for k in alike}, tuned[first]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("network")
    parser.add_argument("--out", type=Path, default=Path("bench/out/tune-native"))
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--trials", type=int, default=1024)
    parser.add_argument("--time", action="store_true", help="build and time the networks")
    parser.add_argument("--processes", type=int, default=5)
    args = parser.parse_args()

    from tcl.tuning.compile import as_tuned
    from tcl.tuning.tune import task_weights
    from tcl.zoo.extract import extracted_tasks, import_network

    platform = platforms.get(args.platform)
    runs, curves, tuned = comparable_runs(args.out, args.network)
    prepack = tuned.weight_prepack
    net = zoo.get(args.network)
    example = zoo.example_input(net)
    mod = as_tuned(import_network(zoo.module(net, example), example), tuned)  # as the runs tuned it
    target = platform.tvm_target()
    weights = task_weights(extracted_tasks(mod, target, weight_prepack=prepack))

    per_run = {label: measured(work, args.trials) for label, work in runs.items()}
    union: dict[str, float] = {}
    found: dict[str, tuple[str, int, str]] = {}  # per task: run, trial index, record line
    for label, (best, line_of, _) in per_run.items():
        for task, cost in best.items():
            if task in weights and cost < union.get(task, float("inf")):
                union[task], found[task] = cost, (label, *line_of[task])
    result: dict[str, Any] = {
        "bench": "headroom",
        "network": args.network,
        "platform": args.platform,
        "trials_per_run": args.trials,
        "tasks": len(weights),
        "runs": {
            label: {
                **run_figures(b, c, union, weights),
                "first_estimate": first_estimate(curves[label]),
            }
            for label, (b, _, c) in per_run.items()
        },
        "best_of_runs_estimate_ms": estimate_ms(union, weights),
        "best_of_runs_tasks_from": Counter(label for label, _, _ in found.values()),
        "best_of_runs_found_at_trial": sorted(trial for _, trial, _ in found.values()),
        "seconds_to_own_final_estimate": {
            label: time_to_final_estimate(curve) for label, curve in curves.items()
        },
    }
    if args.time:
        with tempfile.TemporaryDirectory(prefix="tcl-headroom-") as scratch:
            merged = merged_database(runs, found, Path(scratch) / "best-of-runs")
            libraries = network_libraries(
                runs, merged, mod, target, prepack, args.trials, Path(scratch)
            )
            timings, load = time_network(
                args.network, platform, libraries, processes=args.processes
            )
        result["built_ms"] = {
            label: {"median": t.median, "range": [t.low, t.high]} for label, t in timings.items()
        }
        bound = timings["best-of-runs"].median
        result["built_over_best_of_runs"] = {
            label: t.median / bound for label, t in timings.items() if label != "best-of-runs"
        }
        result["machine_load"] = asdict(load)
    result["machine"] = machine()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
