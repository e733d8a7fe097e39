"""Each convolution's best tuned kernel against PyTorch's convolution of the same shapes.

Where a tuned network stays slower than PyTorch eager, this says whether ranking is what holds
it back: a cost model can only pick among the programs a search proposes. For one network it
takes, per task, the best program that any of the given tuning work directories or committed
pools (``bench/pools/<platform>/search``) measured (the tuner's own mean cost, the kernel
alone), and times PyTorch's ``conv2d`` + ReLU on the task's shapes in this process, on as many
threads as the platform's (one thread: oneDNN's kernel for this CPU, ``torch_cpu_capability``):
the median of ``--repeats`` repeats of >= 100 ms each. The tuned kernel also runs the batch
norm's arithmetic and any residual add fused into it, which PyTorch eager runs as separate
operators, so a ratio above 1 is the tuned convolution's own shortfall, not the fusion's.

The JSON line gives per task its weight (how often the network runs it), shapes, the best
tuned cost, PyTorch's, their ratio and the tuned kernel's GFLOP/s; and the network's sums, the
tuned kernels' (the best any run found: the estimate no cost model picking among these programs
can beat) and the same with every convolution at PyTorch's time. Only 2-D convolutions in NCHW
(as ``tcl tune`` lays them out unless ``--conv-layout``), any groups, are compared; the
other tasks count their tuned cost in both sums. It measures only PyTorch: the tuned costs are
the runs' records.

Usage: taskset -c 1 python bench/bench_torch_convs.py RUN [RUN ...] --network resnet50
[--platform cpu-native-1t] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from pathlib import Path
from typing import Any

from _common import machine, tuned_as
from bench_task_gap import network_tasks, records_within, stored_records, task_costs

from tcl.tuning import platforms
from tcl.tuning.layout import converted_to


def network_convs(network: str, platform: Any, work: Path) -> list[dict[str, Any]]:
    """The network's tuned tasks as ``work``'s run extracted them
    (:func:`bench_task_gap.network_tasks`), a 2-D NCHW convolution's with its data, weight and
    output shapes."""
    layout = converted_to(tuned_as(work).conv_layout)
    if layout:
        raise SystemExit(f"{work}: tuned with --conv-layout {layout}; NCHW only")
    tasks = network_tasks(network, platform, work)
    for t in tasks:
        shapes = t.pop("param_shapes")
        if "conv2d" in t["task"] and len(shapes[0]) == len(shapes[1]) == len(shapes[-1]) == 4:
            t["shapes"] = {"data": shapes[0], "weight": shapes[1], "out": shapes[-1]}
    return tasks


def conv_args(shapes: dict[str, tuple[int, ...]]) -> dict[str, int]:
    """Stride, padding and groups of the NCHW convolution with these shapes (square kernels,
    no dilation, padding symmetric: what the zoo's networks use)."""
    (_, c, h, _), (_, c_per_group, k, _), (_, _, oh, _) = (
        shapes["data"],
        shapes["weight"],
        shapes["out"],
    )
    stride = max(1, (h + k - 1) // oh) if oh > 1 else h
    padding = max(0, ((oh - 1) * stride + k - h + 1) // 2)
    return {"stride": stride, "padding": padding, "groups": c // c_per_group}


def torch_conv_ms(shapes: dict[str, tuple[int, ...]], a: dict[str, int], repeats: int) -> float:
    """PyTorch's conv2d + ReLU on these shapes and :func:`conv_args` ``a``: the median of
    ``repeats`` timings of >= 100 ms (ms a call), after checking its output has the task's
    shape."""
    import torch

    o, c_per_group, k, _ = shapes["weight"]
    channels = c_per_group * a["groups"]
    conv = torch.nn.Conv2d(channels, o, k, a["stride"], a["padding"], groups=a["groups"])
    x = torch.randn(shapes["data"])
    with torch.inference_mode():
        conv.eval()
        got = tuple(conv(x).shape)
        if got != shapes["out"]:
            raise SystemExit(f"PyTorch's conv2d {a} of {shapes} gives {got}")
        for _ in range(5):
            torch.relu(conv(x))
        times = []
        for _ in range(repeats):
            n, start = 0, time.perf_counter()
            while time.perf_counter() - start < 0.1:
                torch.relu(conv(x))
                n += 1
            times.append((time.perf_counter() - start) / n)
    return statistics.median(times) * 1e3


def conv_gflops(shapes: dict[str, tuple[int, ...]], ms: float) -> float:
    """GFLOP/s of a convolution of these shapes that runs in ``ms``."""
    (n, o, oh, ow), (_, c_per_group, kh, kw) = shapes["out"], shapes["weight"]
    return 2 * n * o * oh * ow * c_per_group * kh * kw / ms / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", type=Path, nargs="+", help="work directories or pools")
    parser.add_argument("--network", required=True)
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    os.environ["TVM_NUM_THREADS"] = str(platform.threads)
    import torch

    torch.set_num_threads(platform.threads)
    tasks = network_convs(args.network, platform, args.runs[0])
    keys = {t["key"] for t in tasks}
    best: dict[str, float] = {}
    records = 0  # of the network's tasks (a pool holds other networks' too)
    for work in args.runs:
        stored = [r for r in stored_records(work, records_within(work, None)[0]) if r[0] in keys]
        records += len(stored)
        for key, costs in task_costs(stored)[0].items():
            best[key] = min(best.get(key, math.inf), min(costs))
    rows, tuned_sum, torch_sum = [], 0.0, 0.0
    for t in tasks:
        ms = best.get(t["key"], math.nan) * 1e3
        row = {"task": t["task"], "weight": t["weight"], "tuned_ms": round(ms, 4)}
        theirs = ms
        if "shapes" in t:
            conv = conv_args(t["shapes"])
            theirs = torch_conv_ms(t["shapes"], conv, args.repeats)
            row.update(
                shapes=t["shapes"],
                **conv,
                torch_ms=round(theirs, 4),
                tuned_over_torch=round(ms / theirs, 3),
                tuned_gflops=round(conv_gflops(t["shapes"], ms), 1),
                torch_gflops=round(conv_gflops(t["shapes"], theirs), 1),
            )
        tuned_sum += t["weight"] * ms
        torch_sum += t["weight"] * theirs
        rows.append(row)
    convs = [r for r in rows if "torch_ms" in r]
    print(
        json.dumps(
            {
                "benchmark": "tuned_convs_vs_torch",
                "network": args.network,
                "platform": args.platform,
                "runs": [str(r) for r in args.runs],
                "records": records,
                "tuned_kernels_ms": round(tuned_sum, 3),
                "with_torch_convs_ms": round(torch_sum, 3),
                "convs": len(convs),
                "convs_tuned_faster": sum(r["tuned_over_torch"] < 1 for r in convs),
                "conv_share_of_tuned": round(
                    sum(r["weight"] * r["tuned_ms"] for r in convs) / tuned_sum, 3
                ),
                "torch": torch.__version__,
                "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                "torch_threads": torch.get_num_threads(),
                "tasks": sorted(
                    rows,
                    key=lambda r: -r["weight"] * (r["tuned_ms"] - r.get("torch_ms", r["tuned_ms"])),
                ),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
