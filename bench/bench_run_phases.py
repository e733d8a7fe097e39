"""Where a finished `tcl tune` run's time went, read off MetaSchedule's task scheduler log.

MetaSchedule's task scheduler logs, with whole-second stamps, when it picks a task (its search
starts), when it sends the task's candidates to the builder, and when it sends the built ones
to the runner. A batch is built before the scheduler goes on, so the seconds between sending a
batch to the builder and sending it to the runner are that batch's builds; the seconds from
picking a task to sending its candidates are its search. The rest (collecting results, fitting
XGB, the runner's waits) is counted apart. Builds cut at the builder's timeout are counted from
the task logs (``build timeout after S s``).

Nothing is re-run: this reads a run's work directory (``WORK_DIR/logs``), so it can account
for a run measured on another machine, or long ago, as it was. Stamps are whole seconds, so a
phase of many short steps is counted to about a second a step.

Prints one JSON line per run: the seconds of search, builds and the rest; the programs sent to
the builder; seconds of builds per program; the builds cut at the timeout; and the slowest
batches (seconds, programs, task).

Usage: python bench/bench_run_phases.py WORK_DIR [WORK_DIR ...] [--slowest 6]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

SCHEDULER_LOG = "tvm.s_tir.meta_schedule.logging.task_scheduler.log"
PICK = re.compile(r'TaskScheduler picks Task #\d+: "(.*)"')
TO_BUILDER = re.compile(r"Sending (\d+) sample\(s\) to builder")
TO_RUNNER = re.compile(r"Sending \d+ valid sample\(s\) to runner")
STAMP = "%Y-%m-%d %H:%M:%S"


def stamped(line: str) -> dt.datetime | None:
    """The time a log line was written, None for a line without a stamp (a table's row)."""
    try:
        return dt.datetime.strptime(line[:19], STAMP)
    except ValueError:
        return None


def phases(work_dir: Path, slowest: int) -> dict[str, Any]:
    logs = work_dir / "logs"
    seconds = {"search": 0.0, "builds": 0.0, "rest": 0.0}
    batches: list[tuple[float, int, str]] = []
    phase, task, since, batch = "rest", "", None, 0
    first = last = None
    for line in (logs / SCHEDULER_LOG).read_text(errors="replace").splitlines():
        now = stamped(line)
        if now is None:
            continue
        first, last = first or now, now
        if since is not None:
            seconds[phase] += (now - since).total_seconds()
        since = now
        if picked := PICK.search(line):
            phase, task = "search", picked.group(1)
        elif sent := TO_BUILDER.search(line):
            phase, batch, built_from = "builds", int(sent.group(1)), now
        elif TO_RUNNER.search(line) and phase == "builds":
            batches.append(((now - built_from).total_seconds(), batch, task))
            phase = "rest"
    timeouts = sum(
        path.read_text(errors="replace").count("build timeout after")
        for path in logs.glob("*task_[0-9]*.log")
    )
    programs = sum(n for _, n, _ in batches)
    total = (last - first).total_seconds() if first and last else 0.0
    return {
        "run": work_dir.name,
        "logged_seconds": total,
        "seconds": seconds,
        "programs_built": programs,
        "build_seconds_per_program": seconds["builds"] / programs if programs else None,
        "build_timeouts": timeouts,
        "slowest_batches": [
            {"seconds": s, "programs": n, "task": t} for s, n, t in sorted(batches)[::-1][:slowest]
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("work_dirs", nargs="+", type=Path, metavar="WORK_DIR")
    parser.add_argument("--slowest", type=int, default=6, help="the slowest batches listed")
    args = parser.parse_args()
    for work_dir in args.work_dirs:
        print(json.dumps(phases(work_dir, args.slowest)))


if __name__ == "__main__":
    main()
