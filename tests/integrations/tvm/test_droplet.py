"""tcl.integrations.tvm.droplet: TVM's Droplet walks from each task's best program, its
neighbours measured by the run's builder and runner and committed to the run's database, never
a program the database holds, within the pass's trials, the heaviest task first; a walk ends
where no neighbour is faster."""

from __future__ import annotations

from typing import Any

import pytest

from tcl.integrations.tvm import droplet
from tcl.integrations.tvm.measure import Measurement

pytestmark = pytest.mark.tvm


def _matmul_task(n: int) -> tuple[Any, Any]:
    """An n x n matmul's tune context (post-order-apply: tiles, parallel and vectorize
    annotations, the CPU postprocessors) and a database holding none of its programs."""
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.patches import patch_inspect_stack

    patch_inspect_stack()  # a tune context imports TVM's tensor intrinsics: slow without it
    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    context = ms.TuneContext(
        mod=mod,
        target=tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}),
        space_generator="post-order-apply",
        search_strategy=ms.search_strategy.ReplayTrace(),
        task_name=f"matmul{n}",
        rand_state=0,
        num_threads=1,
    )
    return context, ms.database.MemoryDatabase()


def _store(context: Any, database: Any, programs: int, seconds: float) -> set[str]:
    """Commits ``programs`` random programs of the task, each timed at ``seconds``; their
    trace keys."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    workload = database.commit_workload(context.mod)
    keys = set()
    for candidate in tm.random_candidates(context.mod, context.target, programs, seed=1):
        record = ms.database.TuningRecord(
            candidate.sch.trace, workload, [seconds], context.target, candidate.args_info
        )
        database.commit_tuning_record(record)
        keys.add(tm.text_of_trace(candidate.sch.trace))
    return keys


def _timed(seconds: float, calls: list[int], faster: bool = False) -> Any:
    """A stand-in for ``measure.measure``: every program runs in ``seconds`` (``faster``: each
    faster than every one before it); each call's batch size goes to ``calls``."""

    def measure(builder: Any, runner: Any, candidates: list[Any], target: Any) -> Any:
        calls.append(len(candidates))
        done = sum(calls) - len(candidates)
        times = [seconds / (1 + done + i) if faster else seconds for i in range(len(candidates))]
        return [Measurement([t]) for t in times], {}

    return measure


def _new_records(database: Any, known: set[str]) -> list[Any]:
    from tcl.integrations.tvm.measure import text_of_trace

    return [r for r in database.get_all_tuning_records() if text_of_trace(r.trace) not in known]


def test_the_walk_measures_new_neighbours_of_the_best_and_commits_them() -> None:
    """Real builds and runs: the pass measures at most its trials, each a program the database
    did not hold (and each once), and stores them with their times."""
    from tcl.integrations.tvm import measure as tm
    from tcl.tuning import platforms
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    context, database = _matmul_task(32)
    known = _store(context, database, 3, 1.0)  # stored slow: their neighbours beat them
    protocol = MeasureProtocol.of(platforms.get("cpu-x86-64-1t"), repeat=1, min_repeat_ms=0)
    builder, runner = measurement_workers(tm, protocol, threads=1)
    try:
        measured = droplet.post_optimize([context], [1.0], database, builder, runner, 6)
    finally:
        tm.shutdown(builder, runner)
    new = _new_records(database, known)
    assert 1 <= measured <= 6 and len(new) == measured
    assert len({tm.text_of_trace(r.trace) for r in new}) == len(new)
    assert all(0 < float(r.run_secs[0]) < 1.0 for r in new)  # built, run and timed


def test_a_walk_ends_where_no_neighbour_is_faster(monkeypatch: pytest.MonkeyPatch) -> None:
    context, database = _matmul_task(64)
    _store(context, database, 2, 1e-3)
    calls: list[int] = []
    monkeypatch.setattr(droplet.tm, "measure", _timed(2e-3, calls))  # every neighbour slower
    measured = droplet.post_optimize([context], [1.0], database, None, None, 500)
    assert calls and len(calls) == 1 and measured == calls[0] < 500  # one ring of neighbours
    # Every neighbour faster: the walk moves on to the next ring and spends its trials.
    context, database = _matmul_task(64)
    _store(context, database, 2, 1e-3)
    calls.clear()
    monkeypatch.setattr(droplet.tm, "measure", _timed(1e-4, calls, faster=True))
    assert droplet.post_optimize([context], [1.0], database, None, None, 24) == 24
    assert len(calls) > 1 and sum(calls) == 24


def test_the_trials_are_shared_by_the_time_each_task_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Weight x best time: a task run 3 times at 1 ms holds 3x the time of one run once at 1 ms;
    it walks first, with 3/4 of the trials, the other with what is left."""
    from tcl.integrations.tvm.measure import workload_key

    heavy, database = _matmul_task(64)
    light, _ = _matmul_task(48)
    known = _store(heavy, database, 2, 1e-3) | _store(light, database, 2, 1e-3)
    calls: list[int] = []
    monkeypatch.setattr(droplet.tm, "measure", _timed(1e-4, calls, faster=True))
    assert droplet.post_optimize([light, heavy], [1.0, 3.0], database, None, None, 16) == 16
    per_task: dict[str, int] = {}
    for record in _new_records(database, known):
        task = str(record.workload.as_json()[0])
        per_task[task] = per_task.get(task, 0) + 1
    assert per_task == {workload_key(heavy.mod): 12, workload_key(light.mod): 4}
