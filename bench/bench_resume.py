"""A resumed run that learns its database first, against one that does not: `tcl tune
--minutes R` run again on a work directory that `tcl tune --minutes B` tuned, with
`--learn-earlier` (the cost model first learns every program the database holds, and a task it
holds skips its quick first round) and without it (the default, as a MetaSchedule run resumes:
the model learns only the new run's measurements, and every task starts with its quick round).

Per network, one first run (search seed 0) is tuned once. Each resumed run starts from a copy of
its database with its own search seed, the two arms interleaved A B B A over the seeds. Each run
times its final build in --processes fresh processes, PyTorch eager beside it (tcl tune's timing:
median and range), so the arms are compared by what a user would deploy; the estimated latency
(the database's best program of each task, weighted by how often the task runs) is read off each
run's curve at --at-seconds too. Runs are kept in OUT/<network>-<run>/ and reused, so an
interrupted benchmark resumes.

Prints one JSON line per network: the first run, and per resumed run its built latency (median
[range] of the processes), PyTorch eager's, the programs it measured and its estimates; then the
machine and the versions.

Usage: taskset -c 1 python bench/bench_resume.py [--networks mobilenet_v2,bert_tiny]
       [--first-minutes 2] [--minutes 3] [--seeds 0,1] [--platform cpu-native-1t]
       [--processes 5] [--out bench/out/resume]
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from _common import machine

from tcl.tuning import platforms
from tcl.tuning.options import TuneOptions
from tcl.tuning.report import TuneReport
from tcl.tuning.tune import tune_model, write_report
from tcl.tuning.untuned import UNTUNED_FILE
from tcl.tuning.user_models import load_model

ROOT = Path(__file__).resolve().parent.parent
DATABASE = ("database_workload.json", "database_tuning_record.json", UNTUNED_FILE)
ARMS = {"learn": True, "forget": False}  # arm -> learn_earlier


def tuned(
    network: str,
    work: Path,
    minutes: float,
    seed: int,
    args: argparse.Namespace,
    start_from: Path | None = None,
    learn: bool = False,
) -> TuneReport:
    """``network`` tuned for ``minutes`` in ``work`` as `tcl tune --minutes` does, from a copy
    of ``start_from``'s database; a finished run's report is reused."""
    saved = work / "report.json"
    if saved.exists():
        return TuneReport.from_json(json.loads(saved.read_text()))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for name in DATABASE if start_from is not None else ():
        if (start_from / name).exists():
            shutil.copy(start_from / name, work / name)
    options = TuneOptions.of(  # as `tcl tune --minutes` takes them: its timed defaults
        minutes=minutes,
        seed=seed,
        learn_earlier=learn,
        rounds=args.processes,
        progress=False,
    )
    report = tune_model(load_model(network), platforms.get(args.platform), work, options)
    write_report(report, saved)
    print("\n".join(report.lines()), flush=True)
    return report


def estimate_at(report: TuneReport, seconds: float) -> float | None:
    """The run's estimated latency (ms) after ``seconds`` of its tuning."""
    before = [point for point in report.curve if point["seconds"] <= seconds]
    return round(before[-1]["estimated_ms"], 4) if before else None


def figures(report: TuneReport, at_seconds: list[float]) -> dict[str, Any]:
    tuned_ms = report.samples_ms["tuned"]
    return {
        "built_ms": round(report.latency_ms, 4),
        "built_range_ms": [round(min(tuned_ms), 4), round(max(tuned_ms), 4)],
        "torch_ms": round(report.torch_ms, 4) if report.torch_ms else None,
        "measured": report.measured,
        "tune_seconds": round(report.tune_seconds, 1),
        "estimated_ms": {f"{s:g}": estimate_at(report, s) for s in at_seconds},
        "estimated_end_ms": round(report.curve[-1]["estimated_ms"], 4) if report.curve else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--networks", default="mobilenet_v2,bert_tiny")
    parser.add_argument("--first-minutes", type=float, default=2.0)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--seeds", default="0,1", help="search seeds of the resumed runs")
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--processes", type=int, default=5, help="timing processes per build")
    parser.add_argument("--at-seconds", default="0,30,60,120", help="estimates read off here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "resume")
    args = parser.parse_args()
    at_seconds = [float(s) for s in args.at_seconds.split(",") if s]
    for network in args.networks.split(","):
        start = args.out / f"{network}-first"
        first = tuned(network, start, args.first_minutes, 0, args)
        runs: dict[str, Any] = {}
        for i, seed in enumerate(int(s) for s in args.seeds.split(",")):
            arms = list(ARMS) if i % 2 == 0 else list(reversed(ARMS))  # A B B A
            for arm in arms:
                name = f"{arm}-s{seed}"
                report = tuned(
                    network,
                    args.out / f"{network}-{name}",
                    args.minutes,
                    seed,
                    args,
                    start_from=start,
                    learn=ARMS[arm],
                )
                runs[name] = figures(report, at_seconds)
        out = {
            "benchmark": "resume",
            "network": network,
            "platform": args.platform,
            "first_minutes": args.first_minutes,
            "minutes": args.minutes,
            "first_run": figures(first, at_seconds),
            "runs": runs,
            "method": "one first run (tcl tune --minutes, seed 0); each resumed run from a copy "
            "of its database, arms interleaved A B B A over the seeds; built latency: median "
            f"[range] of {args.processes} fresh processes each",
            "machine": machine(),
        }
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
