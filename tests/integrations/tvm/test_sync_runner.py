"""tcl.integrations.tvm.sync_runner: a batch measured to its end, a disturbed measurement taken
again."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("tvm")


def test_a_measurement_whose_repeats_disagree_is_taken_again() -> None:
    """``SyncRunner``: a candidate whose repeats differ by more than ``REPEATS_DISAGREE`` is
    run once more and keeps the steadier measurement; steady ones and errors run once."""
    from dataclasses import dataclass

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
