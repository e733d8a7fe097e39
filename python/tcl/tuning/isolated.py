"""Timing built networks in fresh processes: the protocol every latency tcl reports follows.

The same build timed in one process can differ by 20% from its timing in another (one that
compiled other networks first, or loaded its libraries in another order), enough to swap the
ranking of two builds. So a build is never timed in the process that made it: each of several
fresh processes (``python -m tcl.tuning.isolated``, which imports TVM and numpy, not torch: see
:func:`without_torch`) loads every library from disk, in an order shuffled per process, and
times each once (:func:`tcl.tuning.timing.tvm_timer`). A build's figure is the median across
processes, its range the spread across processes: what an effect of the process (memory
placement, load order, state left behind) does to it is inside the reported range, not in the
ranking.

PyTorch eager follows the same protocol when its model can be loaded again from where it came
from (:class:`EagerSource`: a zoo network, a ``.pt2`` file, a ``file.py:function`` factory): one
fresh process per round, which imports torch and not TVM, loads the model and the same input
files, and times it once; the TVM process and the torch process take turns at going first. A
module handed over as a Python object has no such source: it is timed in the calling process,
once after each round, and its figure carries that process's effect.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from tcl.integrations.tvm.patches import without_torch
from tcl.tuning.timing import LoadMeter, MachineLoad, Timing, busier, machine_load
from tcl.tuning.user_models import EagerSource

# Fresh processes per timing unless told: 5 samples give a median and a spread.
DEFAULT_PROCESSES = 5

# A build slower than this a run (ms) is timed in the first process only: each process more
# costs two runs (a warm-up and the run), minutes for an untuned large model (an untuned GPT-2
# runs for 46 s), for a spread that matters little at that size.
ONE_PROCESS_MS = 10_000.0


def process_orders(labels: Sequence[str], processes: int, seed: int = 0) -> list[list[str]]:
    """The order in which each process loads and times the libraries: shuffled per process,
    each library first in turn where there are enough processes (a first-loaded library cannot
    stay the one that always lands on a fresh heap)."""
    rng = np.random.default_rng(seed)
    orders = []
    for p in range(processes):
        rest = [label for label in labels if label != labels[p % len(labels)]]
        rng.shuffle(rest)
        orders.append([labels[p % len(labels)], *rest])
    return orders


def time_in_processes(
    libraries: Mapping[str, str | Path],
    inputs: Sequence[np.ndarray],
    *,
    threads: int,
    processes: int = DEFAULT_PROCESSES,
    eager: EagerSource | None = None,
    eager_timer: Callable[[], float] | None = None,
    seed: int = 0,
    device: str = "cpu",
    one_process_ms: float = ONE_PROCESS_MS,
) -> tuple[dict[str, Timing], MachineLoad]:
    """Each library (a relax VM executable written by ``export_library``) timed on ``inputs``
    in ``processes`` fresh processes with ``threads`` TVM threads, on ``device`` ("cpu", or
    "cuda": the first visible GPU, PyTorch eager too), except that a library whose first
    timing is slower than ``one_process_ms`` is not timed again; PyTorch eager ("torch") on
    the same inputs, in a fresh process of its own per round when ``eager`` says where its
    model comes from, else by ``eager_timer`` in this process once after each round; the load
    other processes put on the machine before and while they ran (the larger of the two)."""
    if eager is not None and eager_timer is not None:
        raise ValueError("PyTorch eager is timed in fresh processes or here, not both")
    labels = list(libraries)
    samples: dict[str, list[float]] = {label: [] for label in labels}
    if eager is not None or eager_timer is not None:
        samples["torch"] = []
    before = machine_load()
    meter = LoadMeter().start()
    with tempfile.TemporaryDirectory(prefix="tcl-timing-") as scratch:
        paths = []
        for i, x in enumerate(inputs):
            paths.append(str(Path(scratch) / f"input{i}.npy"))
            np.save(paths[-1], np.ascontiguousarray(x), allow_pickle=False)
        for round_, order in enumerate(process_orders(labels, processes, seed)):
            order = [label for label in order if not _timed_once(samples[label], one_process_ms)]
            specs: list[dict[str, Any]] = [
                {"libraries": [[label, str(libraries[label])] for label in order]}
            ][: bool(order)]
            if eager is not None:
                specs.insert(round_ % 2, {"eager": asdict(eager)})
            for spec in specs:
                child = {**spec, "inputs": paths, "threads": threads, "device": device}
                for label, ms in _time_in_child(child):
                    samples[label].append(ms)
            if eager_timer is not None:
                samples["torch"].append(eager_timer())
    load = busier(before, meter.stop())
    return {label: Timing(values) for label, values in samples.items()}, load


def _timed_once(samples: list[float], one_process_ms: float) -> bool:
    """Whether a library's timing is done after its first process (:data:`ONE_PROCESS_MS`)."""
    return bool(samples) and samples[0] > one_process_ms


def _time_in_child(spec: dict[str, Any]) -> list[tuple[str, float]]:
    """One fresh process's timings (ms) of ``spec``'s libraries, or of PyTorch eager."""
    done = subprocess.run(
        [sys.executable, "-m", "tcl.tuning.isolated"],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        if "eager" in spec:
            names = f"PyTorch eager of {spec['eager']['model']}"
        else:
            names = ", ".join(path for _, path in spec["libraries"])
        raise RuntimeError(f"timing {names} in a fresh process failed: {lines[-1]}")
    timed = json.loads(done.stdout.strip().splitlines()[-1])
    return [(str(k), float(v)) for k, v in timed.items()]


def _child() -> None:
    """Reads a spec (JSON on stdin), loads each library in its order and times each once in
    that order, or PyTorch eager once; prints ``{label: ms}``."""
    spec = json.loads(sys.stdin.read())
    if "eager" in spec:
        _eager_child(spec)
        return
    os.environ["TVM_NUM_THREADS"] = str(spec["threads"])  # before TVM's thread pool starts
    without_torch()
    import tvm
    from tvm import relax

    from tcl.tuning.timing import tvm_timer

    device = tvm.device(spec.get("device", "cpu"))
    tensors = [tvm.runtime.tensor(np.load(p, allow_pickle=False), device) for p in spec["inputs"]]
    timers = {}
    for label, path in spec["libraries"]:
        vm = relax.VirtualMachine(tvm.runtime.load_module(path), device)
        timers[label] = tvm_timer(vm, device, tensors)
    print(json.dumps({label: timer() for label, timer in timers.items()}))


def _eager_child(spec: dict[str, Any]) -> None:
    """PyTorch eager of the spec's model on its input files, timed once: ``{"torch": ms}``."""
    import torch

    from tcl.tuning.timing import torch_timer

    module = EagerSource(**spec["eager"]).load().module
    if module is None:
        raise SystemExit(f"{spec['eager']['model']}: the model has no PyTorch module to time")
    inputs = tuple(torch.from_numpy(np.load(p, allow_pickle=False)) for p in spec["inputs"])
    timer = torch_timer(module, inputs, spec["threads"], spec.get("device", "cpu"))
    print(json.dumps({"torch": timer()}))


if __name__ == "__main__":
    _child()
