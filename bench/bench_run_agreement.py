"""How alike two tuning runs measured the programs both of them measured: how far apart two
runs' estimates can be for the host's state alone.

Two runs of one network with the same first rounds (each task's quick round of transplants and
its round of transplants, which no cost model ranks) measure many of the same programs, in
different minutes. A measurement's repeats agree closely, but the host can run a whole stretch
of a run faster or slower; then one run's estimate (the sum of its tasks' best measured costs)
is lower than the other's for the host's state alone, and its network builds no faster. For
each pair of runs (bench_tune's ``OUT/<network>-<model>-s<seed>`` work directories, or any
``tcl tune`` work directory; a committed store's gzipped files too): the programs both measured
(the same workload and the same trace), the ratios of run A's mean cost to run B's, program by
program, as a geometric mean, a median and the 10th and 90th percentiles. Failed runs are left
out.

It measures nothing: the costs are the runs' own.

Usage: python bench/bench_run_agreement.py RUN_A RUN_B [RUN_A RUN_B ...]
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from _common import records_in_order

from tcl.tuning.allot import FAILED_COST


def costs_by_program(directory: Path) -> dict[tuple[str, str], float]:
    """Each program's mean cost (s) in ``directory``'s database, by (workload, trace) as the
    database holds them; failed runs left out, a program measured twice by its last record."""
    return {
        (workload, json.dumps(trace, sort_keys=True)): cost
        for workload, trace, cost in records_in_order(directory)
        if cost < FAILED_COST
    }


def agreement(a: Path, b: Path) -> dict[str, Any]:
    """Run A's costs against run B's over the programs both measured."""
    costs_a, costs_b = costs_by_program(a), costs_by_program(b)
    ratios = sorted(costs_a[key] / costs_b[key] for key in costs_a.keys() & costs_b.keys())
    if not ratios:
        return {"a": a.name, "b": b.name, "programs": 0}
    return {
        "a": a.name,
        "b": b.name,
        "programs": len(ratios),
        "geomean": round(statistics.geometric_mean(ratios), 3),
        "median": round(statistics.median(ratios), 3),
        "p10": round(ratios[len(ratios) // 10], 3),
        "p90": round(ratios[(9 * len(ratios)) // 10], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="pairs of run directories: A B ...")
    args = parser.parse_args()
    if len(args.runs) % 2:
        parser.error("give the runs in pairs (RUN_A RUN_B ...)")
    pairs = zip(args.runs[::2], args.runs[1::2], strict=True)
    print(json.dumps({"benchmark": "run_agreement", "pairs": [agreement(a, b) for a, b in pairs]}))


if __name__ == "__main__":
    main()
