"""tcl.tuning.timing: interleaved rounds, a VM's timer, medians, ranges, speed-up ranges, and the
load meter."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tcl.tuning.timing import (
    LoadMeter,
    MachineLoad,
    Timing,
    interleaved,
    speedup,
    speedup_text,
    tvm_timer,
)


def test_interleaved_calls_every_timer_once_per_round_in_turn() -> None:
    calls: list[str] = []

    def timer(label: str, value: float) -> float:
        calls.append(label)
        return value

    out = interleaved({"a": lambda: timer("a", 1.0), "b": lambda: timer("b", 2.0)}, rounds=3)
    assert calls == ["a", "b"] * 3
    assert out["a"].samples_ms == [1.0, 1.0, 1.0] and out["b"].median == 2.0


class _Evaluations:
    """A stand-in VM whose ``main`` takes ``seconds`` a run: counts the runs its evaluators make
    (each one warm-up run, then ``repeat`` timed runs, as TVM's ``time_evaluator``)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.runs, self.settings = seconds, 0, []

    def time_evaluator(self, name: str, device: object, **settings: int) -> object:
        assert name == "main"
        self.settings.append(settings)

        def evaluate(*inputs: object) -> object:
            self.runs += 1 + settings["repeat"]
            return type("Result", (), {"median": self.seconds})()

        return evaluate


@pytest.mark.parametrize(
    ("seconds", "runs_for_two_rounds", "settings"),
    [
        (0.01, 2 + 6 + 6, {"number": 1, "repeat": 5, "min_repeat_ms": 50}),
        (0.2, 2 + 4 + 4, {"number": 1, "repeat": 3}),
        (30.0, 2 + 2, {"number": 1, "repeat": 1}),  # the first round is the probe's run
    ],
)
def test_a_vms_timer_repeats_what_is_fast_and_not_what_takes_seconds(
    seconds: float, runs_for_two_rounds: int, settings: dict[str, int]
) -> None:
    vm = _Evaluations(seconds)
    timer = tvm_timer(vm, device=None, inputs=[])
    assert [timer(), timer()] == [seconds * 1e3] * 2
    assert vm.runs == runs_for_two_rounds
    assert vm.settings[-1] == settings


def test_timing_median_and_range() -> None:
    t = Timing([3.0, 1.0, 2.0, 10.0, 2.5])
    assert (t.median, t.low, t.high) == (2.5, 1.0, 10.0)
    assert t.text() == "2.500 ms [1.000-10.000]"


def test_speedup_range_holds_every_pairing_of_rounds() -> None:
    slow, fast = Timing([10.0, 12.0, 11.0]), Timing([4.0, 5.0, 6.0])
    mid, worst, best = speedup(slow, fast)
    assert mid == pytest.approx(11.0 / 5.0)
    assert worst == pytest.approx(10.0 / 6.0) and best == pytest.approx(12.0 / 4.0)
    ratios = [s / f for s in slow.samples_ms for f in fast.samples_ms]
    assert worst == pytest.approx(min(ratios)) and best == pytest.approx(max(ratios))
    assert speedup_text(slow, fast) == "2.20x [1.67-3.00]"


def test_load_meter_sees_another_process_and_not_this_one() -> None:
    # This process spinning is its own CPU time: not "other".
    meter = LoadMeter().start()
    end = time.perf_counter() + 0.5
    while time.perf_counter() < end:
        pass
    own = meter.stop()
    # A separate busy process (not yet waited for) is.
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start
        meter = LoadMeter().start()
        time.sleep(1.0)
        other = meter.stop()
    finally:
        busy.kill()
        busy.wait()
    assert other.other_cores > own.other_cores + 0.4, (own, other)
    assert other.busy and other.cores >= 1


def test_machine_load_text_says_busy_or_quiet() -> None:
    assert "BUSY" in MachineLoad(1.2, 2, 1.0).text()
    assert "quiet" in MachineLoad(0.01, 2, 1.0).text()
