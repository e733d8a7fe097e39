"""Where a tuning run's time goes: the phases of `tcl tune` on one network, for tcl's cost model
and, in the same run, MetaSchedule's XGB at the same settings.

Each run is timed by phase: the cost model's scoring (predict) and learning (update), the builds,
the measurements (runs), and the rest of the tuning loop (MetaSchedule's evolutionary search: trace
replay, mutation, postprocessing, database and callbacks) as the difference to the tuning wall
time. The final build and timing of the network are outside the tuning loop and reported apart.
Phases are timed by wrapping the methods MetaSchedule calls (the builder's build, the runner's
run, the cost model's predict and update) in this process.

Prints one JSON line: per cost model, seconds and share of the tuning time per phase, trials, tuning
rounds, trials per minute and seconds per round, and how many of the programs the cost model was
asked about it had answered before (tcl.integrations.tvm.score_cache), the seconds of
MetaSchedule's own profiler scopes (``EvoSearch/SampleInitPopulation``: drawing the search's
random programs; ``SendToBuilder``, ``SendToRunner``, ...); the machine and versions.
A model named ``KIND:uncached`` is KIND with that cache's twin that keeps nothing (every program
scored each time it is asked about, as before the cache), for the cache's effect side by side;
``KIND:reference-texts`` is KIND with tcl's model reading traces written by the reference twin
of MetaSchedule's record writer (tcl.integrations.tvm.trace_texts), each converted in Python.
Each run also counts the tasks that gave up (a task's search returned nothing new, so MetaSchedule
retires it) and the seconds spent in those last calls; ``KIND:rescan`` is KIND searching a task
whose design space is one program again until it gives up, as before such a task was done once
measured (tcl.integrations.tvm.search).

``--first-round K`` profiles the quick first round of `tcl tune --minutes` alone: each task's
first round of K programs picked among the random programs of a small search (no evolution;
``--quick-population``: how many a task), and no round after it (the run's time budget is spent
from the start, so every task stops after its first round, as `bench_first_round.py` does); its
network is timed in one fresh process. ``--minutes M`` profiles a run as `tcl tune --minutes M`
makes it (its quick round, transplants and narrower later rounds; ``--trials`` and
``--first-round`` are then the time budget's own), with the seconds the transplants' replays
take (``transplants``) as a phase of their own; ``--window S`` adds each phase's seconds in
windows of S seconds of the tuning (``timeline``), to tell the quick round's minute from the
rounds after it.

Usage: python bench/bench_tune_profile.py [--network bert_tiny] [--trials 128] [--models tcl,xgb]
       [--population 128] [--first-round K [--quick-population 32]] [--minutes M] [--window S]
       [--platform cpu-avx2-1t] [--out bench/out/profile]
On a 1-thread platform, run it pinned to one core (`taskset -c 1 python ...`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine
from tvm.s_tir import meta_schedule as ms

from tcl.integrations.tvm import (
    adapter,
    baselines,
    measure,
    score_cache,
    search,
    trace_texts,
    transplant,
)
from tcl.integrations.tvm.sync_runner import SyncRunner
from tcl.tuning import platforms
from tcl.tuning.options import FIRST_ROUND_POPULATION, TuneOptions
from tcl.tuning.tune import DEFAULT_POPULATION, tune_network

ROOT = Path(__file__).resolve().parent.parent
SECONDS: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)
WINDOWS: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
CLOCK = {"start": 0.0, "window": 0.0}  # the tuning's start and the timeline's window, seconds
CACHES: list[score_cache.ScoreCache] = []  # the score caches of the cost models made
KEEPS = score_cache.ScoreCache.rows
EXHAUSTED = search.NewProgramsOnly._cls.exhausted  # type: ignore[attr-defined]
WRITES = trace_texts.trace_texts


def keeps_nothing(
    self: score_cache.ScoreCache, context: Any, candidates: list[Any], compute: Any
) -> np.ndarray:
    """``ScoreCache.rows``'s twin that keeps nothing: every program is scored when asked."""
    self.misses += len(candidates)
    return np.asarray(compute(list(candidates))).reshape(len(candidates), -1)


def timed(phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent = time.perf_counter() - start
            SECONDS[phase] += spent
            CALLS[phase] += 1
            if CLOCK["window"]:  # by the window it started in
                WINDOWS[int((start - CLOCK["start"]) // CLOCK["window"])][phase] += spent

    return run


def gave_up(generate: Callable[..., Any]) -> Callable[..., Any]:
    """``NewProgramsOnly.generate_measure_candidates``, timing the calls that end a task."""

    def run(self: Any) -> Any:
        start = time.perf_counter()
        candidates = generate(self)
        if candidates is None:
            SECONDS["gave up"] += time.perf_counter() - start
            CALLS["gave up"] += 1
        return candidates

    return run


def instrument() -> None:
    """Times the builder, the runner, every cost model ``make_cost_model`` makes, and the
    searches that end a task."""
    strategy = search.NewProgramsOnly._cls  # type: ignore[attr-defined]
    strategy.generate_measure_candidates = gave_up(strategy.generate_measure_candidates)
    for cls, name, phase in (
        (measure.PersistentLocalBuilder._cls, "build", "build"),  # type: ignore[attr-defined]
        (SyncRunner._cls, "run", "run"),  # type: ignore[attr-defined]
    ):
        setattr(cls, name, timed(phase, getattr(cls, name)))
    grafts = transplant.Transplants
    grafts.ranked = timed("transplants", grafts.ranked)  # type: ignore[method-assign]
    make = baselines.make_cost_model

    def make_timed(*args: Any, **kwargs: Any) -> Any:
        model = make(*args, **kwargs)
        inst = getattr(model, "_inst", model)  # the Python object behind TVM's wrapper
        for name in ("predict", "update"):
            setattr(inst, name, timed(name, getattr(inst, name)))
        prior = getattr(getattr(inst, "prior", None), "_inst", None)
        for owner in (inst, prior):
            for name in ("cache", "learned"):
                if isinstance(getattr(owner, name, None), score_cache.ScoreCache):
                    CACHES.append(getattr(owner, name))
        return model

    baselines.make_cost_model = make_timed  # Search.run imports it from the module when it runs


def timed_run(minutes: float, kind: str, population: int) -> dict[str, Any]:
    """The options `tcl tune --minutes --population` gives a run of ``kind`` (its trial count
    among them), as :func:`tune_network` takes them."""
    options = TuneOptions.of(minutes=minutes, cost_model=kind, population=population)
    settings = {f.name: getattr(options, f.name) for f in fields(options) if f.init}
    return {**settings, "rounds": 1}  # its network timed in one fresh process, as a quick round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--trials", type=int, default=128)
    parser.add_argument("--platform", default="cpu-avx2-1t")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "profile")
    parser.add_argument("--models", default="tcl,xgb", help="cost models, in order")
    parser.add_argument(
        "--population",
        type=int,
        default=DEFAULT_POPULATION,
        help=f"the evolutionary search's population (tcl tune --population; default "
        f"{DEFAULT_POPULATION})",
    )
    parser.add_argument(
        "--first-round",
        type=int,
        default=0,
        help="profile only the quick first round of K programs a task (tcl tune --first-round K "
        "under a spent time budget; default 0: the run's rounds as they come)",
    )
    parser.add_argument(
        "--quick-population",
        type=int,
        default=FIRST_ROUND_POPULATION,
        help="the random programs a task the quick round draws (first_round_population; "
        f"default {FIRST_ROUND_POPULATION})",
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="profile a run under this time budget, as `tcl tune --minutes` makes it",
    )
    parser.add_argument(
        "--window",
        type=float,
        default=0.0,
        help="also each phase's seconds in windows of this many seconds of the tuning",
    )
    args = parser.parse_args()
    if args.minutes and args.first_round:
        parser.error("--first-round profiles a quick round alone; --minutes a whole timed run")
    platform = platforms.get(args.platform)
    # A quick round alone: a deadline already passed ends each task after its first round.
    # Its network is then built and timed in one fresh process, not five (it is not the point).
    quick = (
        {
            "first_round": args.first_round,
            "first_round_population": args.quick_population,
            "minutes": 1e-9,
            "rounds": 1,
        }
        if args.first_round
        else {}
    )
    CLOCK["window"] = args.window
    instrument()
    results: dict[str, Any] = {}
    for name in args.models.split(","):
        kind, _, variant = name.partition(":")
        SECONDS.clear()
        CALLS.clear()
        WINDOWS.clear()
        CACHES.clear()
        score_cache.ScoreCache.rows = keeps_nothing if variant == "uncached" else KEEPS  # type: ignore[method-assign]
        adapter.trace_texts = (  # type: ignore[assignment]
            trace_texts.reference_texts if variant == "reference-texts" else WRITES
        )
        search.NewProgramsOnly._cls.exhausted = (  # type: ignore[attr-defined]
            property(lambda self: False) if variant == "rescan" else EXHAUSTED
        )
        work = args.out / f"{args.network}-{kind}{'-' + variant if variant else ''}"
        shutil.rmtree(work, ignore_errors=True)
        settings = (
            timed_run(args.minutes, kind, args.population)
            if args.minutes
            else {"trials": args.trials}
        )
        start = CLOCK["start"] = time.perf_counter()
        with ms.Profiler() as profiler:  # MetaSchedule's own scopes, the search's among them
            report = tune_network(
                args.network,
                platform,
                work_dir=work,
                **{"cost_model": kind, "population": args.population, **quick, **settings},
            )
        total = time.perf_counter() - start
        tuning = report.tune_seconds
        phases = {p: SECONDS[p] for p in ("predict", "update", "build", "run", "transplants")}
        phases["search and loop"] = tuning - sum(phases.values())
        rounds = CALLS["build"]
        trials = report.measured or report.trials  # a time budget's: those it measured
        results[name] = {
            "tuning_seconds": round(tuning, 1),
            "after_tuning_seconds": round(total - tuning, 1),
            "phases_seconds": {p: round(s, 2) for p, s in phases.items()},
            "phases_share": {p: round(s / tuning, 3) for p, s in phases.items()},
            "trials": trials,
            "rounds": rounds,
            "predict_calls": CALLS["predict"],
            "trials_per_minute": round(60 * trials / tuning, 1),
            "seconds_per_round": round(tuning / max(rounds, 1), 2),
            "built_ms": round(report.latency_ms, 4),
            "scores_asked": sum(c.hits + c.misses for c in CACHES),
            "scores_kept": sum(c.hits for c in CACHES),
            "tasks_given_up": CALLS["gave up"],
            "giving_up_seconds": round(SECONDS["gave up"], 2),
            "timeline": {
                f"{w * args.window:g}-{(w + 1) * args.window:g}s": {
                    p: round(s, 2) for p, s in WINDOWS[w].items()
                }
                for w in sorted(WINDOWS)
            },
            "metaschedule_scopes_seconds": {
                scope: round(float(seconds), 2)
                for scope, seconds in sorted(profiler.get().items(), key=lambda kv: -kv[1])
                if seconds >= 0.01
            },
        }
    print(
        json.dumps(
            {
                "benchmark": "tune_profile",
                "network": args.network,
                "platform": platform.name,
                "trials": args.trials,
                "population": args.population,
                "first_round": args.first_round,
                "minutes": args.minutes or None,
                "quick_population": args.quick_population if args.first_round else None,
                "results": results,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
