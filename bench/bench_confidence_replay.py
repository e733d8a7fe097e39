"""How much of a finished run's rounds its cost model could have left unmeasured: `tcl tune
--confident K` replayed on the run's own database.

A round of MetaSchedule's evolutionary search hands out its picks best-scored first, and the
database keeps them in that order. So a finished run says, round by round, how far down the
model's order each round's best program was (`tcl.tuning.allot.picks_needed`). This replays each
run as if its rounds after each task's first had been trimmed by `tcl.tuning.allot.Confidence`
(the policy of `--confident K`, the same code): per task, the best program among the rounds'
kept picks against the best of the whole run, and the programs that would have been measured.

A replay, not a run: a trimmed run's later rounds would search from other programs and its
cost model would learn from fewer, so this bounds what the trimmed rounds lose on the programs
the full run found, not the run a trimmed search would make. A round is a run of consecutive
records of one task in the database, cut into the run's batch size (a task the scheduler picks
twice in a row measures two rounds back to back).

Usage: python bench/bench_confidence_replay.py OUT/<network>-<model>-s<seed> ... [--fewest 2,3,4]
(``bench_tune.py``'s run directories). Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from _common import machine, measured_in_order

from tcl.tuning.allot import FAILED_COST, Confidence, picks_needed
from tcl.tuning.options import TuneOptions
from tcl.tuning.tune import trials_per_round


def rounds_of(work: Path) -> tuple[dict[str, list[list[float]]], int, bool]:
    """Each task's rounds (mean costs in s, in the order they were measured; failed ones as
    :data:`FAILED_COST`) in run directory ``work``, the run's batch size, and whether each
    task's first round was a quick one (``tcl.tuning.tune_search.Search.strategy``'s condition)."""
    report = json.loads((work / "report.json").read_text())
    options = TuneOptions.from_saved(report["options"])
    per_round = trials_per_round(options.trials, int(report["tasks"]))
    quick = options.first_round > 0
    rounds: dict[str, list[list[float]]] = {}
    last = None
    for task, cost in measured_in_order(work):
        task_rounds = rounds.setdefault(task, [])
        size = options.first_round if quick and len(task_rounds) <= 1 else per_round
        if task != last or len(task_rounds[-1]) >= size:
            task_rounds.append([])
        task_rounds[-1].append(cost)
        last = task
    return rounds, per_round, quick


def replay(rounds: dict[str, list[list[float]]], fewest: int, quick: bool) -> dict[str, Any]:
    """The run's rounds trimmed by a :class:`Confidence` of ``fewest`` after each task's first
    round (and after its quick round where ``quick``): the geometric mean and the worst of the
    tasks' best kept cost over their best cost, and the programs kept."""
    ratios, kept, total = [], 0, 0
    for task_rounds in rounds.values():
        confidence, best_kept = Confidence(fewest), math.inf
        for i, costs in enumerate(task_rounds):
            keep = costs
            if not (quick and i == 0):  # as the search: the quick round neither trims nor counts
                keep = costs[: confidence.keep(len(costs))]
                confidence.measured(keep)
            best_kept = min([best_kept, *keep])
            kept, total = kept + len(keep), total + len(costs)
        best = min(min(costs) for costs in task_rounds)
        if best < FAILED_COST:
            ratios.append(best_kept / best)
    return {
        "best_kept_over_best_geomean": round(statistics.geometric_mean(ratios), 4),
        "worst_task": round(max(ratios), 3),
        "tasks_over_5pct": sum(r > 1.05 for r in ratios),
        "programs_kept": kept,
        "programs": total,
    }


def needed_summary(rounds: dict[str, list[list[float]]], quick: bool) -> dict[str, Any]:
    """How far down the model's order each round's best program was, over the rounds after each
    task's first (full) round: the median, and the share within its top 2 and top 4."""
    needed = [
        n
        for task_rounds in rounds.values()
        for costs in task_rounds[(2 if quick else 1) :]
        if (n := picks_needed(costs)) is not None
    ]
    if not needed:
        return {"rounds": 0}
    return {
        "rounds": len(needed),
        "median": statistics.median(needed),
        "within_top_2": round(sum(n <= 2 for n in needed) / len(needed), 3),
        "within_top_4": round(sum(n <= 4 for n in needed) / len(needed), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="bench_tune.py run directories")
    parser.add_argument("--fewest", default="2,3,4", help="--confident values to replay")
    args = parser.parse_args()
    fewest = [int(k) for k in args.fewest.split(",")]
    results = {}
    for work in args.runs:
        rounds, per_round, quick = rounds_of(work)
        results[work.name] = {
            "batch": per_round,
            "needed": needed_summary(rounds, quick),
            "replay": {f"confident_{k}": replay(rounds, k, quick) for k in fewest},
        }
    print(json.dumps({"bench": "confidence_replay", "machine": machine(), "runs": results}))


if __name__ == "__main__":
    main()
