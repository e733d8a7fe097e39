"""RDU selection at scale: 10% of 1,000,000 programs (64-d embeddings, 1,000 tasks of 1,000),
timed by stage, beside the numpy twins on a subset of tasks, in one run. Prints one JSON line.

Usage: python bench/bench_sampler.py [--n 1000000] [--tasks 1000] [--fraction 0.1]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _common import machine

from tcl import _core
from tcl.sampling import reference as ref
from tcl.sampling import sampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--neighbours", type=int, default=10)
    parser.add_argument("--twin-tasks", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    per_task = args.n // args.tasks
    # Clustered embeddings, as programs of a task cluster by their schedule structure.
    centers = rng.normal(size=(args.tasks, 8, args.dim)).astype(np.float32) * 3
    points = centers[np.arange(args.n) // per_task, rng.integers(0, 8, args.n)] + rng.normal(
        size=(args.n, args.dim)
    ).astype(np.float32)
    k = int(np.ceil(args.fraction * per_task))

    start = time.perf_counter()
    seconds = {"knn": 0.0, "density": 0.0, "kcenter": 0.0}
    selected = 0
    twin_seconds = core_seconds_on_twin_tasks = 0.0
    for t in range(args.tasks):
        x = points[t * per_task : (t + 1) * per_task]
        t0 = time.perf_counter()
        distances, indices = sampler.knn(x, args.neighbours + 1)
        t1 = time.perf_counter()
        dens = _core.density_from_knn(distances, indices)
        t2 = time.perf_counter()
        picked, _, _ = _core.greedy_select(x, k, [], 0.5 * dens, 1.0, int(np.argmax(dens)), 1)
        t3 = time.perf_counter()
        seconds["knn"] += t1 - t0
        seconds["density"] += t2 - t1
        seconds["kcenter"] += t3 - t2
        selected += len(picked)
        if t < args.twin_tasks:
            core_seconds_on_twin_tasks += t3 - t1
            t4 = time.perf_counter()
            twin_dens = ref.density_from_knn(distances, indices)
            twin_picked, _, _ = ref.greedy_select(
                x, k, [], 0.5 * twin_dens, 1.0, int(np.argmax(twin_dens))
            )
            twin_seconds += time.perf_counter() - t4
            assert (twin_picked == picked).all()
    total = time.perf_counter() - start
    print(
        json.dumps(
            {
                "n": args.n,
                "dim": args.dim,
                "tasks": args.tasks,
                "fraction": args.fraction,
                "selected": selected,
                "seconds_total": round(total, 2),
                "seconds_knn": round(seconds["knn"], 2),
                "seconds_density": round(seconds["density"], 2),
                "seconds_kcenter": round(seconds["kcenter"], 2),
                "speedup_vs_numpy": round(twin_seconds / core_seconds_on_twin_tasks, 1),
                "numpy_twin_measured_on_tasks": args.twin_tasks,
                "method": "per task: faiss exact kNN, C++ density, C++ greedy RDU (0.5 x density)",
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
