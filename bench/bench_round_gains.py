"""What a task's next batch takes off its best time, by how many programs it had measured, and
how near its best the candidates of its later batches are: read from finished tuning runs.

A task scheduler gives the next round to the task whose round is expected to take most off the
network's time. MetaSchedule's gradient scheduler expects a task's best time / the rounds it
has had (Ansor's), whatever each round measured; ``tcl tune --task-scheduler programs`` counts
the rounds by their programs. This measures the expectation: for every batch of a task after
its first, the relative gain (best before / best after - 1) against the programs the task had
measured before it, pooled over the runs given, per program of the batch. It also gives, for
the same batches, the share of their programs whose time was within ``--near`` of the task's
best before them: a pass that timed every candidate briefly and again in full only where it
came within that factor would time that share twice. And what a batch cost: its seconds of the
run's tuning (from the report's curve, the end of the batch before it to its own), the gain a
second, and the batches that took more than ``--long`` seconds, with their builds that failed
(a time budget cuts a build after 20 s).

A batch is a run of consecutive records of one task in the database (a task picked twice in a
row counts as one batch). It measures nothing.

Usage: python bench/bench_round_gains.py OUT/<network>-<model>-s<seed> ... [--near 1.1,1.2]
[--buckets 2,3,6,12,24,48,96] [--long 25] (``bench_tune.py``'s run directories). Prints one
JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _common import measured_in_order

from tcl.tuning.allot import FAILED_COST


def batches_of(work: Path) -> list[tuple[str, list[float]]]:
    """The run's batches in the order it measured them: (task, mean costs in s; a failed run
    as :data:`FAILED_COST`)."""
    out: list[tuple[str, list[float]]] = []
    for task, cost in measured_in_order(work):
        if not out or out[-1][0] != task:
            out.append((task, []))
        out[-1][1].append(cost)
    return out


def batch_ends(work: Path) -> dict[int, float]:
    """Seconds of tuning at which the run had measured each number of programs (the report's
    curve; none before every task had one)."""
    report = json.loads((work / "report.json").read_text())
    return {int(p["trial"]): float(p["seconds"]) for p in report.get("curve", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--near", default="1.1,1.2,1.5")
    parser.add_argument("--buckets", default="2,3,6,12,24,48,96")
    parser.add_argument("--long", type=float, default=25.0)
    args = parser.parse_args()
    near = [float(x) for x in args.near.split(",")]
    edges = [int(x) for x in args.buckets.split(",")]
    gains: dict[str, list[tuple[float, int, float | None]]] = {}
    later, within = 0, dict.fromkeys(near, 0)
    long: list[dict[str, Any]] = []
    for work in args.runs:
        best: dict[str, float] = {}
        measured: dict[str, int] = {}
        ends, done, last_end = batch_ends(work), 0, None
        for task, costs in batches_of(work):
            done += len(costs)
            end = ends.get(done)
            seconds = end - last_end if end is not None and last_end is not None else None
            last_end = end if end is not None else last_end
            if seconds is not None and seconds > args.long:
                failed = sum(c >= FAILED_COST for c in costs)
                long.append(
                    {
                        "run": work.name,
                        "programs": len(costs),
                        "failed": failed,
                        "seconds": round(seconds, 1),
                    }
                )
            before, after = best.get(task, FAILED_COST), min([*costs, best.get(task, FAILED_COST)])
            if before < FAILED_COST:
                programs = measured[task]
                upper = next((e for e in edges if programs <= e), None)
                lower = max([0, *(e for e in edges if e < programs)]) + 1
                bucket = f"{lower}-{upper}" if upper is not None else f"{lower}+"
                gains.setdefault(bucket, []).append((before / after - 1, len(costs), seconds))
                later += len(costs)
                for factor in near:
                    within[factor] += sum(c <= factor * before for c in costs)
            best[task] = after
            measured[task] = measured.get(task, 0) + len(costs)
    by_programs: dict[str, Any] = {}
    for bucket, found in sorted(gains.items(), key=lambda kv: int(kv[0].split("-")[0].rstrip("+"))):
        total = sum(g for g, _, _ in found)
        sizes = sum(n for _, n, _ in found)
        timed = [(g, t) for g, _, t in found if t is not None]
        seconds = sum(t for _, t in timed)
        by_programs[bucket] = {
            "batches": len(found),
            "mean_batch": round(sizes / len(found), 1),
            "mean_gain": round(total / len(found), 4),
            "gain_a_program": round(total / sizes, 5),
            "mean_seconds": round(seconds / len(timed), 2) if timed else None,
            "gain_a_second": round(sum(g for g, _ in timed) / seconds, 5) if seconds else None,
        }
    print(
        json.dumps(
            {
                "benchmark": "round_gains",
                "runs": [str(w) for w in args.runs],
                "gain_by_programs_before": by_programs,
                "later_programs": later,
                "long_batches": long,
                "within_of_best_before": {
                    str(f): round(n / max(later, 1), 3) for f, n in within.items()
                },
            }
        )
    )


if __name__ == "__main__":
    main()
