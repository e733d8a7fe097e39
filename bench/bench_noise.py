"""Measurement noise of tcl collect's protocol, on a quiet machine and beside other load.

The same built programs (random samples of the design spaces of ResNet-18's heaviest tasks) are
run twice on a quiet machine, then twice while busy loops occupy every core (as tests or builds
would). Prints one JSON line: median coefficient of variation of the stored repeats and the
Spearman rank correlation between two passes, quiet and loaded, plus quiet-vs-loaded agreement.
Pause any running collector first (kill -STOP), or its work counts as load.

Usage: python bench/bench_noise.py [--platform cpu-native-2t] [--tasks 3] [--programs 16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

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


def summarize(runs: list[dict[int, list[float]]]) -> tuple[float, float]:
    common = sorted(set.intersection(*(set(r) for r in runs)))
    cvs = [np.std(r[i]) / np.mean(r[i]) for r in runs for i in common]
    medians = [[float(np.median(r[i])) for i in common] for r in runs]
    return float(np.median(cvs)), spearman(medians[0], medians[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--platform", default="cpu-native-2t")
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--programs", type=int, default=16)
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    protocol = MeasureProtocol()
    evaluator = tm.EvaluatorConfig(
        number=protocol.number, repeat=protocol.repeat, min_repeat_ms=protocol.min_repeat_ms
    )
    builder = tm.PersistentLocalBuilder(protocol.build_workers, protocol.build_timeout_s)
    runner = tm.make_runner(evaluator, protocol.run_timeout_s, rpc=None, threads=platform.threads)
    tasks = sorted(zoo.extract("resnet18", target), key=lambda t: -t.flops)[: args.tasks]
    quiet_cv, quiet_rho, loaded_cv, loaded_rho, cross_rho, slowdown = [], [], [], [], [], []
    for seed, task in enumerate(tasks):
        cands = tm.random_candidates(task.mod, target, args.programs, seed)
        batch = tm.build(builder, cands, target)
        quiet = passes(runner, batch, 2)
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
        for runs, cvs, rhos in ((quiet, quiet_cv, quiet_rho), (loaded, loaded_cv, loaded_rho)):
            cv, rho = summarize(runs)
            cvs.append(cv)
            rhos.append(rho)
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
                "loaded": {
                    "median_cv": round(float(np.median(loaded_cv)), 4),
                    "spearman_two_passes": round(float(np.mean(loaded_rho)), 3),
                    "busy_loops": platform.host.cores,
                },
                "spearman_quiet_vs_loaded": round(float(np.mean(cross_rho)), 3),
                "median_slowdown_loaded": round(float(np.median(slowdown)), 3),
                "protocol": {
                    "number": protocol.number,
                    "repeat": protocol.repeat,
                    "min_repeat_ms": protocol.min_repeat_ms,
                },
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
