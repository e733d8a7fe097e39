"""Measurement noise of tcl collect's protocol, on a quiet machine and beside other load.

The same built programs (random samples of the design spaces of ResNet-18's heaviest tasks) are
run twice on a quiet machine, then twice while busy loops occupy every core (as tests or builds
would). Prints one JSON line: median coefficient of variation of the stored repeats and the
Spearman rank correlation between two passes, quiet and loaded, plus quiet-vs-loaded agreement.
Pause any running collector first (kill -STOP), or its work counts as load.

With --runners N the same builds are also run, quiet, once in each of N fresh runner processes
(a tuning run measures in its own runner process, so two runs of the same programs are two
runner processes), and then once more in the first runner after them: the median |log ratio| of
a program's cost between two passes in one runner back to back, between the first runner and
each fresh one, and between the first runner's first and last passes (the same process, later),
tells whether costs move with the process that measures them or with the time. Each is also
given within the batch (one task's programs, measured together): with the batch's median shift
taken out, what is left is the spread between programs measured at the same time.

Usage: python bench/bench_noise.py [--platform cpu-native-2t] [--tasks 3] [--programs 16]
       [--runners N] [--quiet-only] [--repeat R] [--alloc-repeat A]
--repeat and --alloc-repeat time each program R times on each of A fresh allocations of its
arguments (default: the collector's 3 repeats on one allocation).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import machine

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.tuning import platforms
from tcl.tuning.collect import MeasureProtocol


def spearman(a: list[float], b: list[float]) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    return float(np.corrcoef(ra, rb)[0, 1])


def passes(runner: object, batch: tm.BuiltBatch, n: int) -> list[dict[int, list[float]]]:
    out = []
    for _ in range(n):
        result = tm.run(runner, batch)
        out.append({i: m.run_secs for i, m in result.items() if m.run_secs})
    return out


def log_ratios(a: dict[int, list[float]], b: dict[int, list[float]]) -> np.ndarray:
    """Per program measured in both passes: the log of the ratio of its median costs."""
    common = sorted(set(a) & set(b))
    return np.array([float(np.log(np.median(a[i]) / np.median(b[i]))) for i in common])


def within_batch(ratios: np.ndarray) -> list[float]:
    """|log ratio| once the batch's median log ratio is taken out: what is left of the spread
    when the whole batch's shift (the machine's speed while it ran) is not counted, as when
    programs are compared only with others measured in the same batch."""
    return [abs(float(x)) for x in ratios - np.median(ratios)] if len(ratios) else []


def across_runners(
    make: Callable[[], Any], first: Any, batch: tm.BuiltBatch, n: int
) -> dict[str, list[float]]:
    """Per program, |log ratio| of costs: two passes in ``first`` back to back, ``first``
    against each of ``n`` fresh runners (one pass each), and ``first`` before and after them;
    each also within the batch (:func:`within_batch`)."""
    before = passes(first, batch, 2)
    fresh = []
    for _ in range(n):
        runner = make()
        try:
            fresh.append(passes(runner, batch, 1)[0])
        finally:
            tm.shutdown(runner)
    after = passes(first, batch, 1)[0]
    pairs = {
        "same_runner_back_to_back": [(before[0], before[1])],
        "fresh_runner": [(before[0], f) for f in fresh],
        "same_runner_later": [(before[0], after)],
    }
    spreads: dict[str, list[float]] = {}
    for key, p in pairs.items():
        ratios = [log_ratios(a, b) for a, b in p]
        spreads[key] = [abs(float(x)) for r in ratios for x in r]
        spreads[f"{key}_within_batch"] = [x for r in ratios for x in within_batch(r)]
    return spreads


def summarize(runs: list[dict[int, list[float]]]) -> tuple[float, float]:
    common = sorted(set.intersection(*(set(r) for r in runs)))
    cvs = [np.std(r[i]) / np.mean(r[i]) for r in runs for i in common]
    medians = [[float(np.median(r[i])) for i in common] for r in runs]
    return float(np.median(cvs)), spearman(medians[0], medians[1])


def loaded_figures(
    cvs: list[float], rhos: list[float], cross: list[float], slowdown: list[float], loops: int
) -> dict[str, Any]:
    """The passes beside busy loops, against each other and against the quiet ones."""
    return {
        "loaded": {
            "median_cv": round(float(np.median(cvs)), 4),
            "spearman_two_passes": round(float(np.mean(rhos)), 3),
            "busy_loops": loops,
        },
        "spearman_quiet_vs_loaded": round(float(np.mean(cross)), 3),
        "median_slowdown_loaded": round(float(np.median(slowdown)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--platform", default="cpu-native-2t")
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--programs", type=int, default=16)
    parser.add_argument(
        "--runners", type=int, default=0, help="fresh runner processes to compare (default 0)"
    )
    parser.add_argument(
        "--quiet-only", action="store_true", help="leave out the passes beside busy loops"
    )
    parser.add_argument("--repeat", type=int, default=MeasureProtocol.repeat)
    parser.add_argument("--alloc-repeat", type=int, default=1)
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    protocol = MeasureProtocol()
    evaluator = tm.EvaluatorConfig(
        number=protocol.number, repeat=args.repeat, min_repeat_ms=protocol.min_repeat_ms
    )
    builder = tm.PersistentLocalBuilder(protocol.build_workers, protocol.build_timeout_s)

    def make_runner() -> Any:
        return tm.make_runner(
            evaluator,
            protocol.run_timeout_s,
            rpc=None,
            threads=platform.threads,
            alloc_repeat=args.alloc_repeat,
        )

    runner = make_runner()
    spreads: dict[str, list[float]] = {}
    tasks = sorted(zoo.extract("resnet18", target), key=lambda t: -t.flops)[: args.tasks]
    quiet_cv: list[float] = []
    quiet_rho: list[float] = []
    loaded_cv: list[float] = []
    loaded_rho: list[float] = []
    cross_rho: list[float] = []
    slowdown: list[float] = []
    for seed, task in enumerate(tasks):
        cands = tm.random_candidates(task.mod, target, args.programs, seed)
        batch = tm.build(builder, cands, target)
        quiet = passes(runner, batch, 2)
        if args.runners:
            for key, values in across_runners(make_runner, runner, batch, args.runners).items():
                spreads.setdefault(key, []).extend(values)
        cv, rho = summarize(quiet)
        quiet_cv.append(cv)
        quiet_rho.append(rho)
        if args.quiet_only:
            tm.cleanup(batch)
            continue
        load = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(platform.host.cores)
        ]
        try:
            time.sleep(1)
            loaded = passes(runner, batch, 2)
        finally:
            for p in load:
                p.kill()
                p.wait()
        tm.cleanup(batch)
        cv, rho = summarize(loaded)
        loaded_cv.append(cv)
        loaded_rho.append(rho)
        common = sorted(set(quiet[0]) & set(loaded[0]))
        q = [float(np.median(quiet[0][i])) for i in common]
        lo = [float(np.median(loaded[0][i])) for i in common]
        cross_rho.append(spearman(q, lo))
        slowdown.append(float(np.median(np.asarray(lo) / np.asarray(q))))
    print(
        json.dumps(
            {
                "platform": platform.name,
                "tasks": [t.name for t in tasks],
                "programs_per_task": args.programs,
                "quiet": {
                    "median_cv": round(float(np.median(quiet_cv)), 4),
                    "spearman_two_passes": round(float(np.mean(quiet_rho)), 3),
                },
                **(
                    {}
                    if args.quiet_only
                    else loaded_figures(
                        loaded_cv, loaded_rho, cross_rho, slowdown, platform.host.cores
                    )
                ),
                "runners": {
                    key: {
                        "programs": len(v),
                        "median_abs_log_ratio": round(float(np.median(v)), 4),
                        "share_over_1.2x": round(float(np.mean(np.asarray(v) > np.log(1.2))), 3),
                    }
                    for key, v in spreads.items()
                },
                "protocol": {
                    "number": protocol.number,
                    "repeat": args.repeat,
                    "alloc_repeat": args.alloc_repeat,
                    "min_repeat_ms": protocol.min_repeat_ms,
                },
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
