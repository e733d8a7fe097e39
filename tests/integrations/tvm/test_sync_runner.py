"""tcl.integrations.tvm.sync_runner: a batch measured to its end, a disturbed measurement taken
again, a quick round's batch timed briefly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("tvm")


def test_a_measurement_whose_repeats_disagree_is_taken_again() -> None:
    """``SyncRunner``: a candidate whose repeats differ by more than ``REPEATS_DISAGREE`` is
    run once more and keeps the steadier measurement; steady ones and errors run once."""
    from tvm.s_tir.meta_schedule.runner import RunnerInput

    from tcl.integrations.tvm.sync_runner import SyncRunner

    @dataclass
    class Done:
        run_secs: list[float] | None
        error_msg: str | None = None

        def result(self) -> Done:
            return self

    class Inner:  # each artifact's measurements, in the order they are asked for
        def __init__(self) -> None:
            self.asked: list[str] = []
            self.costs = {
                "steady": [[1e-3, 1.01e-3, 1e-3]],
                "disturbed": [[3.1e-3, 4.0e-3, 2.7e-6], [2.7e-6, 2.8e-6, 2.7e-6]],
                "still": [[1e-3, 5e-3, 1e-3], [1e-3, 9e-3, 1e-3]],  # keeps the steadier first
            }

        def run(self, inputs: list[Any]) -> list[Any]:
            out = []
            for runner_input in inputs:
                path = str(runner_input.artifact_path)
                self.asked.append(path)
                out.append(Done(None, "boom") if path == "error" else Done(self.costs[path].pop(0)))
            return out

    inner = Inner()
    runner = SyncRunner(inner)
    names = ["steady", "disturbed", "error", "still"]
    results = [f.result() for f in runner.run([RunnerInput(n, "llvm", []) for n in names])]
    assert inner.asked == [*names, "disturbed", "still"] and runner.measured_again == 2
    costs = [None if r.run_secs is None else [float(x) for x in r.run_secs] for r in results]
    assert costs[0] == [1e-3, 1.01e-3, 1e-3] and costs[1] == [2.7e-6, 2.8e-6, 2.7e-6]
    assert costs[2] is None and str(results[2].error_msg) == "boom"
    assert costs[3] == [1e-3, 5e-3, 1e-3]
    assert runner.batches[-1][1] == 4


def test_a_quick_round_s_batch_is_timed_briefly_and_the_rounds_after_as_before() -> None:
    """``QuickTiming``: while its ``now`` is set the inner runner measures with its repeats of at
    least ``QUICK_MIN_REPEAT_MS`` (as many calls a repeat, the same cache flush), ``now`` is
    cleared, and its own timing is back for the next batch; a protocol without a floor keeps
    none."""
    from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, RunnerInput

    from tcl.integrations.tvm.sync_runner import QUICK_MIN_REPEAT_MS, QuickTiming, SyncRunner

    @dataclass
    class Done:
        run_secs: list[float]
        error_msg: str | None = None

        def result(self) -> Done:
            return self

    class Inner:  # records the timing each batch is measured with
        def __init__(self, config: Any) -> None:
            self.evaluator_config, self.timings = config, []

        def run(self, inputs: list[Any]) -> list[Any]:
            self.timings.append(self.evaluator_config)
            return [Done([1e-3] * self.evaluator_config.repeat) for _ in inputs]

    rounds = EvaluatorConfig(number=2, repeat=3, min_repeat_ms=20, enable_cpu_cache_flush=True)
    inner, timing = Inner(rounds), QuickTiming(2)
    runner = SyncRunner(inner, timing)
    batch = [RunnerInput("a", "llvm", [])]
    timing.now = True
    quick = runner.run(batch)[0].result()
    assert not timing.now  # the one batch it marked is measured: what runs next is a round's
    after = runner.run(batch)[0].result()
    assert len(quick.run_secs) == 2 and len(after.run_secs) == 3
    first = inner.timings[0]
    assert (first.number, first.repeat, first.min_repeat_ms) == (2, 2, QUICK_MIN_REPEAT_MS)
    assert first.enable_cpu_cache_flush and inner.timings[1] is rounds
    assert inner.evaluator_config is rounds
    cold = EvaluatorConfig(number=1, repeat=5, min_repeat_ms=0, enable_cpu_cache_flush=True)
    assert QuickTiming(1).evaluator(cold).min_repeat_ms == 0
    built_only = QuickTiming(opt_level=1)  # a quick round built its own way, timed as the rounds
    assert built_only.evaluator(rounds) is rounds
