"""How long the tuner's measurement workers take to start: with torch kept out of them and the
workers without the tensor intrinsics (``torchless``, tcl's), against the same workers started as
TVM starts them (``as TVM does``: every worker imports torch through tvm_ffi, and registers the
tensor intrinsics, parsing their TVMScript, as MetaSchedule's default build function does).

Each start happens in a fresh Python process that has imported torch and tcl first (as the
tuner has by then), the two ways alternating A B B A ``--repeats`` times. A start is
``tcl.tuning.collect.measurement_workers`` (the runner, made when its worker is up, then the
persistent builder's workers, started in the background), then a first job for each build
worker. Per start: the seconds until the runner is made and until every build worker has
answered, the CPU seconds of the worker processes (reaped after their shutdown), and whether
any worker had torch loaded.

Prints one JSON line: per way, each start's figures and their medians, the ratios of the
medians, and the machine.

Usage: taskset -c 1 python bench/bench_workers.py [--repeats 2] [--platform cpu-native-1t]
(one pinned core, as the tuning benchmarks run; a quiet machine)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from typing import Any

from _common import machine

WAYS = ("torchless", "as TVM does")


def _torch_loaded() -> bool:
    """In a worker: whether torch is imported there."""
    return sys.modules.get("torch") is not None


def _stock_pinned_init(cpus: tuple[int, ...]) -> None:
    """In the runner's worker of the twin: pinned, then MetaSchedule's builder's initializer."""
    import os

    from tcl.integrations.tvm.patches import stock_builder_init

    if cpus:
        os.sched_setaffinity(0, set(cpus))
    stock_builder_init()


def _maps_torch(pid: int) -> bool:
    """Whether process ``pid`` has torch's library mapped (Linux)."""
    with open(f"/proc/{pid}/maps") as maps:
        return "libtorch" in maps.read()


def start_once(way: str, platform_name: str) -> dict[str, Any]:
    """In a fresh process: one start of the measurement workers, ``way`` as :data:`WAYS`."""
    import resource
    import time

    import torch  # noqa: F401  (the tuner has imported it before its workers start)

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm import patches
    from tcl.tuning import platforms
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    if way == "as TVM does":  # the twin: TVM's worker command, and MetaSchedule's builder's
        tm.patch_torchless_workers = lambda: None  # type: ignore[attr-defined]
        tm.worker_init = patches.stock_builder_init  # type: ignore[attr-defined]
        tm.pinned_worker_init = _stock_pinned_init  # type: ignore[attr-defined]
        tm.build_candidate = None  # type: ignore[attr-defined]  # TVM's default build
    starting: list[Any] = []  # the futures of the build workers' first jobs: their pids
    start = tm.PersistentLocalBuilder._cls.start  # type: ignore[attr-defined]
    tm.PersistentLocalBuilder._cls.start = lambda self: starting.extend(start(self))  # type: ignore[attr-defined]
    platform = platforms.get(platform_name)
    begin = time.perf_counter()
    builder, runner = measurement_workers(tm, MeasureProtocol.of(platform), platform.threads)
    runner_ready = time.perf_counter() - begin
    pids = [f.result() for f in starting]
    builders_ready = time.perf_counter() - begin
    loaded = [_maps_torch(pid) for pid in pids]
    runner_torch = runner.pool.submit(_torch_loaded).result()
    tm.shutdown(builder, runner)
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "runner_ready_s": round(runner_ready, 2),
        "builders_ready_s": round(builders_ready, 2),
        "workers_cpu_s": round(used.ru_utime + used.ru_stime, 2),
        "build_workers": len(set(pids)),
        "torch_in_workers": any(loaded) or runner_torch,
    }


def _in_child(way: str, platform_name: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", way, "--platform", platform_name],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2, help="A B B A blocks")
    ap.add_argument("--platform", default="cpu-native-1t")
    ap.add_argument("--child", choices=WAYS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(start_once(args.child, args.platform)))
        return
    runs: dict[str, list[dict[str, Any]]] = {way: [] for way in WAYS}
    for _ in range(args.repeats):
        for way in (*WAYS, *reversed(WAYS)):
            runs[way].append(_in_child(way, args.platform))
    figures = ("runner_ready_s", "builders_ready_s", "workers_cpu_s")
    medians = {
        way: {f: round(statistics.median(r[f] for r in runs[way]), 2) for f in figures}
        for way in WAYS
    }
    print(
        json.dumps(
            {
                "benchmark": "workers",
                "platform": args.platform,
                "starts_per_way": 2 * args.repeats,
                "runs": runs,
                "median": medians,
                "ratio": {
                    f: round(medians["as TVM does"][f] / medians["torchless"][f], 2)
                    for f in figures
                },
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
