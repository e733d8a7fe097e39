"""How long a program takes to build, by how far it unrolls its loops, and to run.

MetaSchedule draws each block's explicit unroll step from 0, 16, 64 and 512 on a CPU, and what
LLVM compiles grows with it. This builds random programs of a zoo network's tasks (the kind a
quick first round picks from) one at a time through the tuner's builder
(``tcl.integrations.tvm.measure.PersistentLocalBuilder``, one worker), times each build, and
groups them by their unroll step (``tcl.integrations.tvm.build_cost.unroll_step``): the
programs within a bound (``--bound``, 64 by default, as ``tcl tune --first-round-unroll``)
against those past it, in the same run.

Prints one JSON line: per unroll step, the programs, their median and total build seconds and
the share of all the build time; the median build past the bound over the median within it;
the machine.

``--phases`` builds the same programs in this process instead, as the builder's worker does
(MetaSchedule's ``default_build`` and ``default_export``, then the runner's load), and times
each build's phases apart: TVM's TIR lowering passes; LLVM's code generation and its
optimisation passes (``tir_to_runtime``, which makes the LLVM module); the machine code
(the export to the builder's tar artifact, where LLVM emits the object file); and the load (the
runner's untar and link into a shared library). Their totals, shares and medians are printed
per unroll step and in all.

``--runs`` builds the programs through the tuner's builder, then measures all of them through
the tuner's runner (``SyncRunner`` over a local runner, one worker, as ``tcl tune`` measures)
with the rounds' timing (3 repeats of at least 20 ms) and with a quick round's
(``QuickTiming``: ``--repeats`` of at least 10 ms), in turn, twice each (A B A B). It prints
each pass's seconds, and each pass's measurements (the mean of a program's repeats) against the
first pass's, as the median and the range of their ratios: what the quick timing saves, and how
far apart two passes of the same timing already are.

``--database DIR`` builds the programs a MetaSchedule database holds instead (a tuning run's
work directory, or a committed store's gzipped one; ``--sample N`` of them at random), with the
postprocessing replayed as the search applied it, through the tuner's builder with a timeout of
``--timeout`` seconds. It prints the build seconds' percentiles, how many took longer than each
of ``--over``, and the slowest programs with their unroll step and their run time (as the
database holds it) over their task's best there: how long the rare long builds are, and
whether they are programs worth waiting for. Programs the database holds as failed are built
too (a build that timed out in the run shows as a timeout here).

Usage: taskset -c 1 python bench/bench_build_cost.py [--network resnet50] [--programs 2]
       [--bound 64] [--platform cpu-native-1t] [--phases | --runs [--repeats 2]]
       taskset -c 1 python bench/bench_build_cost.py --database DIR [--sample N]
       [--timeout 120] [--over 5,10,20]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _common import against_first, machine, open_store

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.build_cost import unroll_step
from tcl.integrations.tvm.droplet import NOT_RUN
from tcl.tuning import platforms

PHASES = ("lowering", "llvm_codegen_and_optimisation", "machine_code", "load")


def build_phases(mod: Any, target: Any) -> dict[str, float]:
    """Seconds of each of :data:`PHASES` of one program's build, made by the functions the
    tuner's build worker calls (MetaSchedule's ``default_build`` and ``default_export``) and
    loaded as its runner does (``load_module``), here in this process. The LLVM module is made
    inside ``tvm.tirx.build`` by ``tir_to_runtime``, timed by wrapping it; the rest of the
    build is the lowering."""
    import tvm
    from tvm.s_tir.meta_schedule.builder.local_builder import default_build, default_export

    # the module: ``tvm.tirx.build`` as an attribute is the function of the same name
    tir_build = importlib.import_module("tvm.tirx.build")
    to_runtime = tir_build.tir_to_runtime
    codegen: list[float] = []

    def timed_to_runtime(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return to_runtime(*args, **kwargs)
        finally:
            codegen.append(time.perf_counter() - start)

    tir_build.tir_to_runtime = timed_to_runtime
    try:
        start = time.perf_counter()
        built = default_build(mod, target, None)
        lowered = time.perf_counter()
    finally:
        tir_build.tir_to_runtime = to_runtime
    artifact = default_export(built)
    exported = time.perf_counter()
    tvm.runtime.load_module(artifact)
    loaded = time.perf_counter()
    shutil.rmtree(os.path.dirname(artifact))  # default_export's own temporary folder
    return dict(
        zip(
            PHASES,
            (lowered - start - codegen[0], codegen[0], exported - lowered, loaded - exported),
            strict=True,
        )
    )


def phases_summary(phases: dict[int, list[dict[str, float]]]) -> dict[str, Any]:
    """Per unroll step and in all: programs, and per phase the total seconds, their share of
    the build and the median."""

    def summary(builds: list[dict[str, float]]) -> dict[str, Any]:
        total = sum(sum(b.values()) for b in builds)
        return {
            "programs": len(builds),
            "total_s": round(total, 2),
            **{
                phase: {
                    "total_s": round(sum(b[phase] for b in builds), 2),
                    "share": round(sum(b[phase] for b in builds) / total, 3),
                    "median_s": round(statistics.median(b[phase] for b in builds), 3),
                }
                for phase in PHASES
            },
        }

    every = [b for builds in phases.values() for b in builds]
    return {
        "all": summary(every),
        "by_unroll_step": {str(step): summary(b) for step, b in sorted(phases.items())},
    }


def timed_builds(
    candidates: list[Any], target: Any, timeout: float = 60.0
) -> list[tuple[float, Any]]:
    """Each candidate built alone through the tuner's builder (one worker, started before the
    first is timed, a build cut after ``timeout`` s): its seconds, and its failure
    (``tm.Measurement``; None where it built)."""
    out = []
    builder = tm.PersistentLocalBuilder(max_workers=1, timeout_sec=timeout)
    try:
        for job in builder.start():
            job.result()
        for candidate in candidates:
            start = time.perf_counter()
            batch = tm.build(builder, [candidate], target)
            out.append((time.perf_counter() - start, batch.failures.get(0)))
            tm.cleanup(batch)
    finally:
        tm.shutdown(builder)
    return out


def worker_builds(candidates: list[Any], target: Any) -> dict[int, list[float]]:
    """Seconds of each candidate's build through the tuner's builder (:func:`timed_builds`),
    by its unroll step; failed builds left out."""
    seconds: dict[int, list[float]] = defaultdict(list)
    for candidate, (took, failure) in zip(
        candidates, timed_builds(candidates, target), strict=True
    ):
        if failure is None:
            seconds[unroll_step(candidate.sch.trace)].append(took)
    return seconds


def in_process_phases(candidates: list[Any], target: Any) -> dict[int, list[dict[str, float]]]:
    """:func:`build_phases` of each candidate, by its unroll step."""
    phases: dict[int, list[dict[str, float]]] = defaultdict(list)
    for candidate in candidates:
        phases[unroll_step(candidate.sch.trace)].append(build_phases(candidate.sch.mod, target))
    return phases


def run_passes(candidates: list[Any], target: Any, repeats: int) -> dict[str, Any]:
    """The built ``candidates`` measured by the tuner's runner with the rounds' timing and the
    quick round's (``repeats`` repeats), A B A B: each pass's seconds and its measurements
    against the first pass's (ratios of the means of their repeats)."""
    from tcl.integrations.tvm.sync_runner import QuickTiming, SyncRunner
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    # the tuner's builder and runner, measuring as its rounds do (one build worker: the runs,
    # not the builds, are timed here)
    builder, inner = measurement_workers(tm, MeasureProtocol(build_workers=1), threads=1)
    protocol, quick = inner.evaluator_config, QuickTiming(repeats)
    runner = SyncRunner(inner, quick)
    passes: list[tuple[str, float, dict[int, float]]] = []
    try:
        batch = tm.build(builder, candidates, target)
        tm.run(runner, batch, batch.index[:1])  # the runner's worker up before any pass
        for name in ("rounds", "quick", "rounds again", "quick again"):
            quick.now = name.startswith("quick")
            start = time.perf_counter()
            measured = tm.run(runner, batch)
            took = time.perf_counter() - start
            means = {i: statistics.mean(m.run_secs) for i, m in measured.items() if m.run_secs}
            passes.append((name, took, means))
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder, inner)
    first = passes[0][2]
    return {
        "programs_run": len(first),
        "quick_timing": {
            "repeat": repeats,
            "min_repeat_ms": quick.evaluator(protocol).min_repeat_ms,
        },
        "passes": [
            {
                "timing": name,
                "seconds": round(took, 2),
                "against_first": against_first(first, means),
            }
            for name, took, means in passes
        ],
    }


def database_candidates(work: Path, target: Any, sample: int) -> list[tuple[Any, float]]:
    """The programs of the MetaSchedule database in ``work`` (``sample`` of them at random,
    seed 0; 0: all), each replayed with its task's postprocessors for ``target``: (candidate,
    its mean run seconds as stored over the best of its task's in the whole database; None
    where it is stored as failed)."""
    import random
    import tempfile

    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.replay import measure_candidate, replayed

    with tempfile.TemporaryDirectory() as scratch:
        records = list(open_store(work, Path(scratch)).get_all_tuning_records())
    keys = [tm.workload_key(r.workload.mod) for r in records]
    seconds = [statistics.mean(float(x) for x in r.run_secs) for r in records]
    best: dict[str, float] = defaultdict(lambda: NOT_RUN)
    for key, secs in zip(keys, seconds, strict=True):
        best[key] = min(best[key], secs)
    chosen = list(range(len(records)))
    if 0 < sample < len(records):
        chosen = random.Random(0).sample(chosen, sample)
    postprocs: dict[str, Any] = {}
    out = []
    for i in chosen:
        record, key = records[i], keys[i]
        if key not in postprocs:
            context = ms.TuneContext(
                mod=record.workload.mod, target=target, space_generator="post-order-apply"
            )
            postprocs[key] = context.space_generator.postprocs
        sch = replayed(record.workload.mod, record.trace, postprocs[key])
        if sch is None:
            continue
        ratio = seconds[i] / best[key] if seconds[i] < NOT_RUN else None
        out.append((measure_candidate(sch), ratio))
    return out


def database_builds(args: argparse.Namespace, target: Any) -> dict[str, Any]:
    """The build seconds of the programs of ``--database`` (:func:`database_candidates`),
    each through the tuner's builder (one worker, ``--timeout``), summarised."""
    drawn = database_candidates(args.database, target, args.sample)
    built = timed_builds([candidate for candidate, _ in drawn], target, args.timeout)
    rows = [
        {
            "build_s": round(took, 3),
            "unroll": unroll_step(candidate.sch.trace),
            "error": failure.error if failure else "",
            "run_over_task_best": round(over_best, 2) if over_best else None,
        }
        for (candidate, over_best), (took, failure) in zip(drawn, built, strict=True)
    ]
    seconds = sorted(r["build_s"] for r in rows)
    quantiles = statistics.quantiles(seconds, n=100, method="inclusive")
    return {
        "database": args.database.name,
        "programs": len(rows),
        "timeout_s": args.timeout,
        "build_s": {
            "median": round(statistics.median(seconds), 3),
            "p90": round(quantiles[89], 3),
            "p99": round(quantiles[98], 3),
            "max": seconds[-1],
        },
        "longer_than": {f"{o:g}s": sum(s > o for s in seconds) for o in args.over},
        "slowest": sorted(rows, key=lambda r: -r["build_s"])[:8],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--programs", type=int, default=2, help="random programs a task")
    parser.add_argument("--bound", type=int, default=64)
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument(
        "--phases", action="store_true", help="time each build's phases, in this process"
    )
    parser.add_argument(
        "--runs", action="store_true", help="time the runs with the rounds' and a quick timing"
    )
    parser.add_argument("--repeats", type=int, default=2, help="the quick timing's repeats")
    parser.add_argument("--database", type=Path, help="build the programs this database holds")
    parser.add_argument("--sample", type=int, default=0, help="of --database's programs (0: all)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a build may take")
    parser.add_argument(
        "--over", type=lambda t: [float(x) for x in t.split(",")], default=[5.0, 10.0, 20.0]
    )
    args = parser.parse_args()

    target = platforms.get(args.platform).tvm_target()
    if args.database is not None:
        figures = database_builds(args, target)
        print(json.dumps({"bench": "build_cost_database", **figures, "machine": machine()}))
        return
    tasks = zoo.extract(args.network, target)
    candidates = [
        c
        for i, t in enumerate(tasks)
        for c in tm.random_candidates(t.mod, target, args.programs, i)
    ]
    drawn = {
        "network": args.network,
        "platform": args.platform,
        "tasks": len(tasks),
        "programs_drawn": len(candidates),
    }
    if args.runs or args.phases:
        name, figures = (
            ("run_cost", run_passes(candidates, target, args.repeats))
            if args.runs
            else ("build_cost_phases", phases_summary(in_process_phases(candidates, target)))
        )
        print(json.dumps({"bench": name, **drawn, **figures, "machine": machine()}))
        return
    seconds = worker_builds(candidates, target)
    total = sum(sum(s) for s in seconds.values())
    within = [s for step, ss in seconds.items() if step <= args.bound for s in ss]
    past = [s for step, ss in seconds.items() if step > args.bound for s in ss]
    print(
        json.dumps(
            {
                "bench": "build_cost",
                "network": args.network,
                "platform": args.platform,
                "tasks": len(tasks),
                "programs": sum(len(s) for s in seconds.values()),
                "failed": len(candidates) - sum(len(s) for s in seconds.values()),
                "by_unroll_step": {
                    str(step): {
                        "programs": len(ss),
                        "median_s": round(statistics.median(ss), 3),
                        "total_s": round(sum(ss), 2),
                        "share_of_build_time": round(sum(ss) / total, 3),
                    }
                    for step, ss in sorted(seconds.items())
                },
                "bound": args.bound,
                "past_over_within_median": (
                    round(statistics.median(past) / statistics.median(within), 2)
                    if past and within
                    else None
                ),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
