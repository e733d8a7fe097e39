"""How long `tcl quickstart` takes, phase by phase, with its measurement workers started in
the background and made in the foreground as they were before.

`tcl quickstart` (BERT-tiny, a one-minute tuning budget, both cores) runs in this process, in a
fresh work directory each time, the two variants interleaved ``--repeats`` times after a run
left out (Python's imports, and what a process loads once, are done before the runs timed). Each
run is timed by phase: before the tuning (the network's tasks and tune contexts, the measurement
workers, whose processes import TVM), the tuning (the budget, and whatever its first builds wait
for), the tuned and untuned builds and their timing in fresh processes beside PyTorch eager, and
the report. The default makes the builder and runner in a thread of its own while the tasks are
made, and starts the build workers at once (``tcl.tuning.collect.start_measurement_workers``);
``serial`` makes them in the foreground, one thing after the other, and leaves each build worker
to start at its first build.

Prints one JSON line: per variant, each run's seconds per phase and trials measured, the
medians, and the machine.

Usage: python bench/bench_quickstart.py [--repeats 2] [--out bench/out/quickstart]
(the quickstart uses both cores: run it on a quiet machine, unpinned)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch  # noqa: F401  (imported once, before any run is timed, as the CLI would)
from _common import machine
from tvm.s_tir import meta_schedule as ms

from tcl.cli import main as tcl_main
from tcl.integrations.tvm import measure
from tcl.tuning import tune, tune_search

ROOT = Path(__file__).resolve().parent.parent
MARKS: dict[str, float] = {}
SEARCH = tune_search.Search.start_workers
BUILDER_START = measure.PersistentLocalBuilder._cls.start  # type: ignore[attr-defined]


def marked(name: str, function: Any) -> Any:
    """``function``, recording when its first call starts (``name``) and ends (``name`` end)."""

    def run(*args: Any, **kwargs: Any) -> Any:
        MARKS.setdefault(name, time.perf_counter())
        try:
            return function(*args, **kwargs)
        finally:
            MARKS.setdefault(f"{name} end", time.perf_counter())

    return run


def serial_workers(self: tune_search.Search, platform: Any) -> Future[tuple[Any, Any]]:
    """The workers made when asked for, in the foreground, with no build worker started."""
    from tcl.tuning.collect import measurement_workers

    future: Future[tuple[Any, Any]] = Future()
    future.set_result(measurement_workers(measure, self.protocol(platform), platform.threads))
    return future


def lazy_workers(self: Any) -> list[Any]:
    """``PersistentLocalBuilder.start`` doing nothing: each worker starts at its first build."""
    return []


def quickstart(work: Path, variant: str) -> dict[str, Any]:
    """One `tcl quickstart` in ``work``: seconds per phase, trials measured."""
    serial = variant == "serial"
    tune_search.Search.start_workers = serial_workers if serial else SEARCH  # type: ignore[method-assign]
    measure.PersistentLocalBuilder._cls.start = lazy_workers if serial else BUILDER_START  # type: ignore[attr-defined]
    tune_tasks = ms.tune_tasks
    ms.tune_tasks = marked("tuning", tune_tasks)
    time_result = tune.time_result
    tune.time_result = marked("timing", time_result)
    MARKS.clear()
    shutil.rmtree(work, ignore_errors=True)
    start = time.perf_counter()
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            code = tcl_main(["quickstart", "--work-dir", str(work), "--quiet"])
    finally:
        ms.tune_tasks, tune.time_result = tune_tasks, time_result
    end = time.perf_counter()
    if code != 0:
        raise SystemExit(f"tcl quickstart failed ({variant}): {out.getvalue()[-500:]}")
    report = json.loads((work / "report.json").read_text())
    return {
        "before tuning": round(MARKS["tuning"] - start, 1),
        "tuning": round(MARKS["tuning end"] - MARKS["tuning"], 1),
        "build and timing": round(MARKS["timing end"] - MARKS["tuning end"], 1),
        "report": round(end - MARKS["timing end"], 1),
        "total": round(end - start, 1),
        "trials": report["measured"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "quickstart")
    args = parser.parse_args()
    # A first run in a process pays for what is loaded once (the base model, TVM's lazily
    # built parts): it is left out of the figures.
    warmup = quickstart(args.out / "warmup", "default")["total"]
    runs: dict[str, list[dict[str, Any]]] = {"serial": [], "default": []}
    for repeat in range(args.repeats):
        order = ["serial", "default"] if repeat % 2 == 0 else ["default", "serial"]
        for variant in order:
            runs[variant].append(quickstart(args.out / variant, variant))
    medians = {
        variant: {key: statistics.median(run[key] for run in done) for key in done[0]}
        for variant, done in runs.items()
    }
    print(
        json.dumps(
            {
                "benchmark": "quickstart",
                "repeats": args.repeats,
                "warmup_seconds": warmup,
                "runs": runs,
                "medians": medians,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
