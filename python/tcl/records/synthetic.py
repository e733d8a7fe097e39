"""Ansor (auto_scheduler) logs written by tcl itself, shaped like TVM's tutorial logs.

The record tests and the ingest benchmark need Ansor-format files, and real ones (TVM's tutorial
logs) are not part of the repository. :func:`write_ansor_logs` writes five files with the same
names, targets and record counts as those logs — flat TenSet-style and nested workload keys,
``#`` comment lines, CPU and CUDA targets, every one of Ansor's 14 step kinds with the argument
types TVM writes — from a seed, so that every test runs on every machine. The schedules are
well-formed (tile sizes divide their extents, stage ids are small) but not measured: costs are
drawn, not timed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

# TVM's auto_scheduler IteratorAnnotation values.
UNROLL, VECTORIZE, PARALLEL, VTHREAD, BLOCK_X, THREAD_X = 1, 2, 3, 4, 5, 6

CPU_HARDWARE = [8, 64, 64, 0, 0, 0, 0, 0]
CUDA_HARDWARE = [-1, 16, 64, 49152, 2147483647, 1024, 8, 32]

# Each file's target, as in TVM's tutorial logs: four targets, two of them CUDA.
TARGETS = {
    "matmul.json": "llvm -keys=cpu",
    "conv2d.json": "cuda -keys=cuda,gpu -max_num_threads=1024 -thread_warp_size=32",
    "sparse_dense.json": "llvm -keys=cpu",
    "resnet-50-NHWC-B1-llvm.json": "llvm -keys=cpu -mcpu=core-avx2",
    "resnet-18-NHWC-B1-cuda.json": (
        "cuda -keys=cuda,gpu -arch=sm_86 -max_num_threads=1024 -thread_warp_size=32"
    ),
}

# file name -> (records, comment lines): the layout of TVM's tutorial logs.
LAYOUT = {
    "matmul.json": (1, 1),
    "conv2d.json": (1, 1),
    "sparse_dense.json": (1, 1),
    "resnet-50-NHWC-B1-llvm.json": (26, 2),
    "resnet-18-NHWC-B1-cuda.json": (24, 0),
}


def _tiles(rng: random.Random, extent: int, parts: int) -> list[int]:
    """``parts`` inner tile sizes whose product divides ``extent``."""
    sizes, left = [], extent
    for _ in range(parts):
        divisors = [d for d in range(1, min(left, 64) + 1) if left % d == 0]
        d = rng.choice(divisors)
        sizes.append(d)
        left //= d
    return sizes


def _split(rng: random.Random, stage: int, iterator: int, extent: int, parts: int) -> list[Any]:
    return ["SP", stage, iterator, extent, _tiles(rng, extent, parts), 1]


def _unroll(rng: random.Random, stage: int) -> list[Any]:
    return ["PR", stage, 0, f"auto_unroll_max_step${rng.choice([0, 16, 64, 512])}"]


def _cpu_steps(rng: random.Random, shape: list[int]) -> list[list[Any]]:
    """A matmul-like CPU schedule: tiled, reordered, cached, parallel outer and vector inner."""
    n, m, k = shape
    steps: list[list[Any]] = [
        _split(rng, 2, 0, n, 3),
        _split(rng, 2, 4, m, 3),
        _split(rng, 2, 8, k, 1),
        ["RE", 2, [0, 4, 1, 5, 8, 2, 6, 9, 3, 7]],
        ["FSP", 4, 0, 0, 2],
        ["FSP", 4, 3, 1, 2],
        ["RE", 4, [0, 3, 1, 4, 2, 5]],
        ["CA", 2, 4, 3],
        ["FU", 4, [0, 1]],
        ["AN", 4, 0, PARALLEL],
        _unroll(rng, 2),
        ["AN", 2, 9, VECTORIZE],
        ["AN", 4, 4, VECTORIZE],
    ]
    if rng.random() < 0.5:  # a reduction factored out (rfactor) and its inlined consumers
        steps += [
            _split(rng, 3, 1, k, 1),
            ["RF", 3, 2, 1],
            ["RE", 3, [0, 2, 1]],
            ["CR", 6],
            ["CA", 5, 6, 1],
            ["CI", 1],
        ]
    if rng.random() < 0.3:
        steps.append(["SA", 2, 0, 64, 1])  # storage_align(stage, iterator, factor, offset)
    return steps


def _cuda_steps(rng: random.Random, shape: list[int]) -> list[list[Any]]:
    """A conv-like CUDA schedule: cache stages in shared and local memory, cooperative fetch,
    block and thread bindings."""
    n, m, k = shape
    steps: list[list[Any]] = [
        ["CI", 11],
        ["CI", 9],
        ["CHW", 6, "local"],
        _split(rng, 6, 0, n, 4),
        _split(rng, 6, 5, m, 4),
        _split(rng, 6, 10, k, 2),
        ["RE", 6, [0, 5, 1, 6, 10, 2, 7, 11, 3, 8, 4, 9]],
        ["FSP", 7, 0, 3, 3],
        ["FSP", 7, 4, 4, 3],
        ["RE", 7, [0, 4, 1, 5, 2, 6, 3, 7]],
        ["CA", 6, 7, 5],
        ["CHR", 5, "shared", [6]],
        ["CA", 6, 7, 6],
        ["CHR", 4, "shared", [7]],
        ["CA", 5, 8, 6],
        ["FU", 7, [0, 1]],
        ["AN", 7, 0, BLOCK_X],
        ["FU", 7, [1, 2]],
        ["AN", 7, 1, VTHREAD],
        ["FU", 7, [2, 3]],
        ["AN", 7, 2, THREAD_X],
        ["FU", 5, [0, 1, 2, 3]],
        _split(rng, 5, 0, 8 * m, 1),
        ["AN", 5, 1, THREAD_X],
        ["FFSP", 5, 0, [4, 3, 2, 1], 1, 1],
        ["AN", 5, 1, THREAD_X],
        _unroll(rng, 4),
        _unroll(rng, 8),
    ]
    if rng.random() < 0.5:
        steps += [["AN", 6, 9, UNROLL], ["CI", 3], ["CA", 2, 4, 3]]
    return steps


def _record(
    rng: random.Random, key: list[Any], target: str, hardware: list[int], steps: list[Any]
) -> str:
    repeats = rng.choice([1, 3, 10])
    base = 10 ** rng.uniform(-6, -2)
    costs = [float(f"{base * rng.uniform(0.95, 1.05):.6g}") for _ in range(repeats)]
    task: list[Any] = [json.dumps(key), target, hardware]
    if rng.random() < 0.5:  # newer TVM writes the layout-rewrite fields as well
        task += ["", rng.choice([0, 2])]
    result = [costs, 0, round(rng.uniform(0.1, 2.0), 5), 1606960000 + rng.randrange(10**7)]
    version = rng.choice(["v0.3", "v0.5", "v0.6"])
    return json.dumps({"i": [task, [[], steps]], "r": result, "v": version})


def _shape(rng: random.Random) -> list[int]:
    return [rng.choice([1, 7, 14, 49, 56, 128, 256, 1024]) for _ in range(3)]


def ansor_lines(name: str, seed: int = 0) -> list[str]:
    """The lines of one file of :data:`LAYOUT`: its comment lines, then its records."""
    records, comments = LAYOUT[name]
    rng = random.Random(f"{name}:{seed}")
    lines = [
        f"# tcl-generated Ansor log {name}, seed {seed}, comment {c + 1}" for c in range(comments)
    ]
    target = TARGETS[name]
    for _ in range(records):
        shape = _shape(rng)
        if name.startswith("resnet"):  # nested keys: a hash, then the tensors' shapes
            digest = f"{rng.getrandbits(128):032x}"
            key: list[Any] = [digest, [1, shape[0], shape[0], shape[2]], [3, 3, shape[2], shape[1]]]
        else:  # flat TenSet-style keys: the function name, then its scalar arguments
            key = [name.removesuffix(".json") + "_add", *shape, "float32"]
        if target.startswith("cuda"):
            lines.append(_record(rng, key, target, CUDA_HARDWARE, _cuda_steps(rng, shape)))
        else:
            lines.append(_record(rng, key, target, CPU_HARDWARE, _cpu_steps(rng, shape)))
    return lines


def write_ansor_logs(directory: str | Path, seed: int = 0) -> Path:
    """Writes the five files of :data:`LAYOUT` into ``directory`` (created) and returns it."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name in LAYOUT:
        (out / name).write_text("\n".join(ansor_lines(name, seed)) + "\n")
    return out
