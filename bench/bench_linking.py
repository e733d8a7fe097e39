"""What linking a CPU candidate where it is built saves on each measurement.

MetaSchedule's builder exports a candidate as a tar of object files and its runner links it
with ``g++`` before each run; ``PersistentLocalBuilder(link=True)`` (the tuner's and the
collector's on a local CPU: ``tcl.integrations.tvm.linking``) links it in the build worker
with ``ld`` and the runner opens it as it is. This draws ``--programs`` random programs of each
task of ``--network``, then builds and measures all of them through the tuner's builder (one
worker) and runner (the rounds' timing, or ``--repeat-ms``), MetaSchedule's export and the
linked one in turn, A B A B: each pass's build and run seconds, and each linked pass's
measurements against the first tar pass's (ratios of the means of their repeats, beside the
tar's own second pass).

Usage: python bench/bench_linking.py --network bert_tiny [--programs 4]
[--platform cpu-native-1t] [--repeat-ms 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from _common import against_first, machine

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.tuning import platforms


def one_pass(candidates: list[Any], target: Any, link: bool, repeat_ms: int) -> dict[str, Any]:
    """The candidates built by a fresh builder (``link``) and measured by a fresh runner: the
    seconds of the builds and of the runs, and each candidate's mean cost by its index."""
    from tcl.integrations.tvm.sync_runner import SyncRunner
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    protocol = MeasureProtocol(build_workers=1, min_repeat_ms=repeat_ms)
    builder, inner = measurement_workers(tm, protocol, threads=1)
    builder.link = link
    runner = SyncRunner(inner)
    try:
        warm = tm.build(builder, candidates[:1], target)  # the workers up before the timing
        tm.run(runner, warm)
        tm.cleanup(warm)
        start = time.perf_counter()
        batch = tm.build(builder, candidates, target)
        built = time.perf_counter()
        measured = tm.run(runner, batch)
        ran = time.perf_counter()
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder, inner)
    return {
        "build_s": built - start,
        "run_s": ran - built,
        "means": {i: statistics.mean(m.run_secs) for i, m in measured.items() if m.run_secs},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--programs", type=int, default=4, help="random programs a task")
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--repeat-ms", type=int, default=20, help="each repeat's least length")
    args = parser.parse_args()

    target = platforms.get(args.platform).tvm_target()
    tasks = zoo.extract(args.network, target)
    candidates = [
        c
        for i, t in enumerate(tasks)
        for c in tm.random_candidates(t.mod, target, args.programs, i)
    ]
    passes = [
        (name, one_pass(candidates, target, name.startswith("linked"), args.repeat_ms))
        for name in ("tar", "linked", "tar again", "linked again")
    ]
    first = passes[0][1]["means"]
    figures = {
        "bench": "linking",
        "network": args.network,
        "platform": args.platform,
        "tasks": len(tasks),
        "programs": len(candidates),
        "repeat_ms": args.repeat_ms,
        "passes": [
            {
                "export": name,
                "build_s": round(p["build_s"], 2),
                "run_s": round(p["run_s"], 2),
                "ms_a_program": round(1e3 * (p["build_s"] + p["run_s"]) / len(candidates), 1),
                "measured": len(p["means"]),
                "against_first": against_first(first, p["means"]),
            }
            for name, p in passes
        ],
        "machine": machine(),
    }
    tar = [p for name, p in passes if name.startswith("tar")]
    linked = [p for name, p in passes if name.startswith("linked")]
    total = [sum(p["build_s"] + p["run_s"] for p in ps) for ps in (tar, linked)]
    figures["linked_over_tar_seconds"] = round(total[1] / total[0], 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
