"""A GPU task's untuned (dlight) kernel: made and built without a GPU, kept beside the database,
starting the estimate, and keeping the tuned network from any kernel slower than dlight's."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import matmul_module

pytest.importorskip("tvm")

from tcl.tuning import untuned

LLVM = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}


def _database(work: Path, costs: dict[int, list[float]]) -> tuple[Any, dict[int, str]]:
    """A JSON database in ``work`` with one record per cost (seconds) of an n x n matmul, for
    each n of ``costs``; the workload key of each n."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.measure import random_candidates, workload_key

    target = tvm.target.Target(LLVM)
    database = ms.database.JSONDatabase(work_dir=str(work))
    keys = {}
    for n, seconds in costs.items():
        mod = matmul_module(n)
        keys[n] = workload_key(mod)
        workload = database.commit_workload(mod)
        for cost, candidate in zip(
            seconds, random_candidates(mod, target, len(seconds), 0), strict=True
        ):
            database.commit_tuning_record(
                ms.database.TuningRecord(
                    candidate.sch.trace, workload, [cost], target, candidate.args_info
                )
            )
    return database, keys


def test_a_gpu_tasks_untuned_kernel_is_dlights_and_builds_without_a_gpu() -> None:
    """Each BERT-tiny task's candidate is the kernel relax schedules without tuning: bound to
    GPU threads and marked scheduled; tcl's build workers build it for an H100 here (the CUDA
    source is compiled when a GPU loads it)."""
    import tvm

    from tcl import zoo
    from tcl.integrations.tvm import measure as tm
    from tcl.tuning import platforms
    from tcl.zoo.extract import extracted_tasks, import_network

    target = tvm.target.Target(platforms.get("cuda-h100").tvm_target())
    net = zoo.get("bert_tiny")
    example = zoo.example_input(net, tiny=True)
    tasks = extracted_tasks(import_network(zoo.module(net, example), example), target)
    candidates = [untuned.untuned_candidate(task, target) for task in tasks]
    for candidate in candidates:
        func = candidate.sch.mod["main"]
        assert func.attrs["tirx.is_scheduled"] and "threadIdx.x" in func.script()
    builder = tm.PersistentLocalBuilder(max_workers=2)
    try:
        batch = tm.build(builder, candidates, target)
        assert not batch.failures and len(batch.inputs) == len(tasks)
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder)


@pytest.mark.slow
def test_untuned_kernels_are_measured_by_the_tuners_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The measurement itself, on this CPU: each task's kernel (here a random program for
    llvm, as no GPU is here) goes through the same build and run workers as the candidates,
    and comes back as its mean seconds by workload key."""
    import tvm

    from tcl.integrations.tvm import measure as tm
    from tcl.tuning.collect import MeasureProtocol, measurement_workers

    class Task:
        def __init__(self, n: int) -> None:
            self.dispatched = [matmul_module(n)]

    target = tvm.target.Target(LLVM)
    monkeypatch.setattr(
        untuned,
        "untuned_candidate",
        lambda task, target: tm.random_candidates(task.dispatched[0], target, 1, 0)[0],
    )
    tasks = [Task(16), Task(32)]
    builder, runner = measurement_workers(tm, MeasureProtocol(repeat=2, min_repeat_ms=0), 1)
    try:
        times = untuned.measure_untuned(tasks, target, builder, runner)
    finally:
        tm.shutdown(builder, runner)
    assert set(times) == {tm.workload_key(t.dispatched[0]) for t in tasks}
    assert all(0 < s < 1 for s in times.values())


def test_tasks_whose_programs_are_slower_than_their_untuned_kernel_are_left_to_dlight(
    tmp_path: Path,
) -> None:
    database, keys = _database(tmp_path, {16: [3e-6, 2e-6], 24: [5e-6, 4e-6], 32: [9e-6]})
    times = {keys[16]: 1e-6, keys[24]: 6e-6}  # 16: dlight is faster; 24: the tuned one; 32: none
    kept = untuned.tuned_where_faster(database, times)
    from tcl.integrations.tvm.measure import entry_key

    left = sorted(entry_key(r.workload) for r in kept.get_all_tuning_records())
    assert left == sorted([keys[24], keys[24], keys[32]])
    assert len(untuned.tuned_where_faster(database, {}).get_all_tuning_records()) == 5


def test_kept_untuned_times_are_reused_and_the_rest_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Task:
        def __init__(self, n: int) -> None:
            self.dispatched = [matmul_module(n)]

    from tcl.integrations.tvm.measure import workload_key

    tasks = [Task(16), Task(24)]
    untuned.save_untuned(tmp_path, {workload_key(tasks[0].dispatched[0]): 2e-6})
    asked: list[Any] = []

    def measured(missing: list[Any], *_: Any) -> dict[str, float]:
        asked.extend(missing)
        return {workload_key(t.dispatched[0]): 5e-6 for t in missing}

    monkeypatch.setattr(untuned, "measure_untuned", measured)
    times = untuned.untuned_seconds(tasks, None, None, None, tmp_path)
    assert asked == [tasks[1]] and sorted(times.values()) == [2e-6, 5e-6]
    assert untuned.load_untuned(tmp_path) == times  # kept for the next run
    assert untuned.untuned_seconds(tasks, None, None, None, tmp_path) == times and len(asked) == 1
    assert json.loads((tmp_path / untuned.UNTUNED_FILE).read_text()) == times


def test_the_estimate_starts_from_the_untuned_kernels(tmp_path: Path) -> None:
    """A GPU run's curve has a network at trial 0 (the untuned kernels' sum, when they were
    measured); each task then counts the faster of its untuned kernel and its best program."""
    from tcl.tuning.curves import estimate_curve

    _, keys = _database(tmp_path, {16: [3e-6, 1e-6], 24: [5e-6]})
    weights = {keys[16]: 2.0, keys[24]: 1.0}
    times = {keys[16]: 2e-6, keys[24]: 4e-6}
    curve = estimate_curve(tmp_path, weights, [(110.0, 3)], 100.0, 0, times, 1.5)
    assert [p["trial"] for p in curve] == [0, 1, 2, 3]
    assert curve[0]["seconds"] == 1.5
    expected = [2 * 2e-6 + 4e-6, 2 * 2e-6 + 4e-6, 2 * 1e-6 + 4e-6, 2 * 1e-6 + 4e-6]
    assert [p["estimated_ms"] for p in curve] == pytest.approx([e * 1e3 for e in expected])
    without = estimate_curve(tmp_path, weights, [(110.0, 3)], 100.0)
    assert [p["trial"] for p in without] == [3] and not math.isnan(without[0]["estimated_ms"])


@pytest.mark.parametrize(
    "text", ["{not json", "[1, 2]", '{"a": "fast"}', '{"a": -1}', '{"a": NaN}', "\udcff"]
)
def test_a_damaged_untuned_kernels_file_is_refused_naming_it(tmp_path: Path, text: str) -> None:
    from tcl.errors import TclError

    (tmp_path / untuned.UNTUNED_FILE).write_text(text, errors="surrogateescape")
    with pytest.raises(TclError, match=untuned.UNTUNED_FILE):
        untuned.load_untuned(tmp_path)
