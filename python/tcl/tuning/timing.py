"""Timing builds side by side: interleaved rounds, medians with their spread, and how busy the
machine was while they ran.

A latency taken once, minutes apart from the one it is compared with, can be off by several
times when another process wakes up (a 2-thread PyTorch run with one core taken by someone else
slowed down 60x). So every figure a user is shown comes from :func:`interleaved` (all contenders
timed in turn, round after round, so that a drift hits them alike), is a median with its range,
and is printed beside :class:`MachineLoad`, the CPU other processes used while it was measured.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcl._format import counted

# Other processes using a quarter of a core or more make a timing suspect on a 2-core machine.
BUSY_CORES = 0.25


# Where a timing ran when not on a remote device (reports name the device otherwise).
THIS_MACHINE = "this machine"


@dataclass
class Timing:
    """Latency samples (ms) of one contender, one per round."""

    samples_ms: list[float]

    @property
    def median(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def low(self) -> float:
        return float(min(self.samples_ms))

    @property
    def high(self) -> float:
        return float(max(self.samples_ms))

    def text(self) -> str:
        return f"{self.median:.3f} ms [{self.low:.3f}-{self.high:.3f}]"


def speedup(slower: Timing, faster: Timing) -> tuple[float, float, float]:
    """``slower / faster``: the ratio of medians and the range the rounds allow (worst, best)."""
    return (
        slower.median / faster.median,
        slower.low / faster.high,
        slower.high / faster.low,
    )


def speedup_text(slower: Timing, faster: Timing) -> str:
    mid, low, high = speedup(slower, faster)
    return f"{mid:.2f}x [{low:.2f}-{high:.2f}]"


@dataclass
class MachineLoad:
    """CPU time (in cores) that processes other than this one used while sampling."""

    other_cores: float
    cores: int
    seconds: float

    @property
    def busy(self) -> bool:
        return self.other_cores >= BUSY_CORES

    def text(self) -> str:
        state = "BUSY" if self.busy else "quiet"
        return (
            f"machine {state}: other processes used {self.other_cores:.2f} of "
            f"{counted(self.cores, 'core')} over {self.seconds:.1f} s"
        )


class LoadMeter:
    """Measures the CPU other processes use between :meth:`start` and :meth:`stop`: the whole
    machine's busy time minus this process's (and its children's) own."""

    def __init__(self) -> None:
        import psutil

        self._psutil = psutil
        self._me = psutil.Process()
        self._start: tuple[float, float, float] | None = None

    def _now(self) -> tuple[float, float, float]:
        total = self._psutil.cpu_times()
        busy = sum(total) - total.idle - getattr(total, "iowait", 0.0)
        mine = self._me.cpu_times()
        own = mine.user + mine.system + mine.children_user + mine.children_system
        return time.monotonic(), busy, own

    def start(self) -> LoadMeter:
        self._start = self._now()
        return self

    def stop(self) -> MachineLoad:
        assert self._start is not None, "LoadMeter.stop() before start()"
        t0, busy0, own0 = self._start
        t1, busy1, own1 = self._now()
        wall = max(t1 - t0, 1e-9)
        other = max(0.0, (busy1 - busy0) - (own1 - own0)) / wall
        return MachineLoad(round(other, 3), os.cpu_count() or 1, round(wall, 2))


def busier(before: MachineLoad, during: MachineLoad) -> MachineLoad:
    """The load to report for a timing: the larger of the load sampled before it and the load
    measured while it ran."""
    return during if during.other_cores >= before.other_cores else before


def machine_load(seconds: float = 1.0) -> MachineLoad:
    """How busy the machine is now, sampled over ``seconds`` while this process sleeps."""
    meter = LoadMeter().start()
    time.sleep(seconds)
    return meter.stop()


def interleaved(timers: dict[str, Callable[[], float]], rounds: int) -> dict[str, Timing]:
    """Calls every timer once per round, in turn, for ``rounds`` rounds."""
    samples: dict[str, list[float]] = {label: [] for label in timers}
    for _ in range(rounds):
        for label, timer in timers.items():
            samples[label].append(timer())
    return {label: Timing(values) for label, values in samples.items()}


# A run this long (s) is a round by itself: repeats would add minutes and no precision, the
# spread between fresh processes being larger than a run's between repeats
SLOW_RUN_S = 1.0


def tvm_timer(vm: Any, device: Any, inputs: list[Any]) -> Callable[[], float]:
    """One round of a relax VM's ``main``: the median of 5 repeats of >= 50 ms each; for a
    build slower than 50 ms a run, of 3 single runs; for one slower than :data:`SLOW_RUN_S`
    (an untuned large network: an untuned GPT-2 runs for tens of seconds), one run, the first
    round being the run that measured it. Each evaluation runs ``main`` once more first, as a
    warm-up (TVM's ``time_evaluator``)."""
    single = vm.time_evaluator("main", device, number=1, repeat=1)
    once = float(single(*inputs).median)
    if once > SLOW_RUN_S:
        measured = [once]
        return lambda: (measured.pop() if measured else float(single(*inputs).median)) * 1e3
    if once > 0.05:
        evaluate = vm.time_evaluator("main", device, number=1, repeat=3)
    else:
        evaluate = vm.time_evaluator("main", device, number=1, repeat=5, min_repeat_ms=50)
    return lambda: float(evaluate(*inputs).median) * 1e3


def torch_timer(
    model: Any, inputs: tuple[Any, ...], threads: int, device: str = "cpu"
) -> Callable[[], float]:
    """One round of PyTorch eager with ``threads`` threads (the TVM runtime's count) on
    ``device`` ("cpu", or "cuda": the model and inputs are moved there, and each call is timed
    to the end of its kernels, the device synchronized after it): the median of single calls
    over >= 50 ms and >= 5 calls."""
    import torch

    if device != "cpu":
        model = model.to(device)
        inputs = tuple(x.to(device) for x in inputs)

    def finish() -> None:
        if device != "cpu":
            torch.cuda.synchronize(device)

    def run() -> float:
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            times: list[float] = []
            with torch.no_grad():
                begin = time.perf_counter()
                while len(times) < 5 or time.perf_counter() - begin < 0.05:
                    finish()
                    t0 = time.perf_counter()
                    model(*inputs)
                    finish()
                    times.append(time.perf_counter() - t0)
            return float(np.median(times)) * 1e3
        finally:
            torch.set_num_threads(previous)

    model.eval()
    run()  # warm-up: first calls allocate and pick kernels
    return run
