"""Where a built network's time goes, kernel by kernel: a library `tcl tune` wrote, run on this
CPU with each of its kernels timed.

The relax VM calls each kernel (a fused PrimFunc) by name; an instrument around every call
reads a monotonic clock before and after it. The network runs ``--warmup`` times untimed, then
``--runs`` times timed; each kernel's time is its calls' sum over the timed runs, divided by
the runs. The clock and the instrument's call add about a microsecond a kernel, so the sum
of the kernels reads a little above the network's latency as ``tcl tune`` times it (no
instrument): compare kernels and libraries with each other, not with that latency.

``layout_transform_ms`` sums the kernels relax legalized from ``layout_transform`` (the
conversions between a blocked convolution's layout and NCHW, :mod:`tcl.tuning.layout`), which
no tuning task covers.

Prints one JSON line per library: the machine, the network, the runs, the sum of the kernels,
the layout transforms' share, and the ``--top`` slowest kernels (ms a run, calls a run).

Usage: taskset -c 1 python bench/bench_kernels.py LIBRARY.so [LIBRARY.so ...] --network mobilenet_v2
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine

LAYOUT_TRANSFORM = "layout_transform"


def kernel_times(library: Path, example: Any, warmup: int, runs: int) -> dict[str, Any]:
    """Each kernel's seconds and calls over ``runs`` runs of ``library`` on ``example``."""
    import tvm
    from tvm import relax

    device = tvm.cpu()
    vm = relax.VirtualMachine(tvm.runtime.load_module(str(library)), device)
    inputs = [tvm.runtime.tensor(example.numpy(), device)]
    for _ in range(warmup):
        vm["main"](*inputs)
    seconds: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter[str] = collections.Counter()
    started = [0.0]

    def instrument(_func: Any, name: str, before: bool, _ret: Any, *_args: Any) -> None:
        if before:
            started[0] = time.perf_counter()
        else:
            seconds[name] += time.perf_counter() - started[0]
            calls[name] += 1

    vm.set_instrument(instrument)
    for _ in range(runs):
        vm["main"](*inputs)
    return {"seconds": dict(seconds), "calls": dict(calls)}


def summary(library: Path, times: dict[str, Any], runs: int, top: int) -> dict[str, Any]:
    ms = {name: s / runs * 1e3 for name, s in times["seconds"].items()}
    slowest = sorted(ms.items(), key=lambda kv: -kv[1])[:top]
    return {
        "library": library.name,
        "run": library.parent.name,
        "kernels_ms": round(sum(ms.values()), 3),
        "layout_transform_ms": round(
            sum(v for name, v in ms.items() if LAYOUT_TRANSFORM in name), 3
        ),
        "layout_transform_calls": sum(
            n // runs for name, n in times["calls"].items() if LAYOUT_TRANSFORM in name
        ),
        "slowest": [
            {"kernel": name, "ms": round(v, 3), "calls": times["calls"][name] // runs}
            for name, v in slowest
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("libraries", nargs="+", type=Path, metavar="LIBRARY")
    parser.add_argument("--network", required=True, help="the zoo network the libraries run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--top", type=int, default=8, help="the slowest kernels listed")
    args = parser.parse_args()
    from tcl import zoo

    example = zoo.example_input(zoo.get(args.network))
    for library in args.libraries:
        times = kernel_times(library, example, args.warmup, args.runs)
        line = summary(library, times, args.runs, args.top)
        print(json.dumps({"network": args.network, "runs": args.runs, **line, **machine()}))


if __name__ == "__main__":
    main()
