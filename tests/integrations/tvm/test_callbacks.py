"""tcl.integrations.tvm.callbacks: the tuner's measure callbacks."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import matmul_module

pytest.importorskip("tvm")


class _Recorder:
    """Stands in for a MetaSchedule measure callback: keeps what each ``apply`` was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, list[Any], list[Any], list[Any]]] = []

    def apply(self, _: Any, task_id: int, candidates: Any, built: Any, ran: Any) -> None:
        self.calls.append((task_id, list(candidates), list(built), list(ran)))


def test_the_tuners_callbacks_see_only_the_candidates_that_were_measured() -> None:
    """``measured_only``: a batch's candidates that a time budget left unbuilt never reach the
    callbacks (the database, the cost model, the progress bar); build and run failures do,
    and a batch with nothing measured is not handed on at all."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.builder import BuilderResult
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.callbacks import measured_only

    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    a, b, c, d = tm.random_candidates(matmul_module(16), target, 4, seed=0)
    scheduler = ms.task_scheduler.RoundRobin()
    first, second = _Recorder(), _Recorder()
    callback = measured_only([first, second])
    errors = [None, tm.NOT_BUILT, "build error: x", tm.NOT_BUILT]
    built = [BuilderResult("a.tar" if e is None else None, e) for e in errors]
    ran = [RunnerResult([1e-3] if e is None else None, e) for e in errors]
    callback.apply(scheduler, 3, [a, b, c, d], built, ran)
    assert first.calls == second.calls and len(first.calls) == 1
    task_id, candidates, kept_built, kept_ran = first.calls[0]
    assert task_id == 3 and all(x.same_as(y) for x, y in zip(candidates, [a, c], strict=True))
    assert [r.error_msg for r in kept_built] == [None, "build error: x"]
    assert [r.error_msg for r in kept_ran] == [None, "build error: x"]
    callback.apply(scheduler, 4, [b], [built[1]], [ran[1]])
    assert len(first.calls) == 1  # all unbuilt: nothing to hand on
    callback.apply(scheduler, 5, [d], [built[0]], [ran[0]])
    assert len(first.calls) == 2 and first.calls[-1][0] == 5
