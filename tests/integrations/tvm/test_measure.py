"""tcl.integrations.tvm.measure: the build and run workers that measure candidates."""

from __future__ import annotations

import pytest

from conftest import matmul_module

pytest.importorskip("tvm")

LLVM = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}


def test_a_runner_times_each_allocation_of_the_arguments() -> None:
    """``make_runner(alloc_repeat=A)`` times each candidate on A fresh allocations of its
    arguments, the evaluator's repeats on each: A x repeat costs, all of them positive."""
    import tvm

    from tcl.integrations.tvm import measure as tm

    repeat, alloc_repeat = 2, 3
    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 2, seed=0)
    builder = tm.PersistentLocalBuilder(max_workers=1)
    evaluator = tm.EvaluatorConfig(number=1, repeat=repeat, min_repeat_ms=0)
    runner = tm.make_runner(evaluator, 30.0, rpc=None, threads=1, alloc_repeat=alloc_repeat)
    try:
        batch = tm.build(builder, candidates, target)
        assert not batch.failures
        measured = tm.run(runner, batch)
        tm.cleanup(batch)
    finally:
        tm.shutdown(builder, runner)
    assert len(measured) == len(batch.inputs) > 0
    for result in measured.values():
        assert result.run_secs is not None, result.message
        assert len(result.run_secs) == repeat * alloc_repeat
        assert all(cost > 0 for cost in result.run_secs)


def test_shutdown_stops_a_worker_caught_starting() -> None:
    """A build worker caught between its process starting and its pipes opening (right after
    ``PersistentLocalBuilder.start``): ``shutdown`` kills it and leaves the pool unlocked and
    marked shut down, so that its ``__del__`` never blocks a later garbage collection."""
    import subprocess
    import sys

    from tvm.support.popen_pool import PopenWorker

    from tcl.integrations.tvm import measure as tm

    builder = tm.PersistentLocalBuilder(max_workers=1)
    starting = PopenWorker()
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    starting._proc = process
    builder.pool._worker_map[0] = starting  # as TVM's _worker_run leaves it mid-start
    tm.shutdown(builder)
    assert process.poll() is not None and starting._proc is None  # the process is gone
    assert builder.pool._shutdown and not builder.pool._lock.locked()
    tm.shutdown(builder)  # a second shutdown is a no-op


def test_shutdown_closes_the_pipes_of_a_start_caught_half_way() -> None:
    """A worker whose starting thread opened its pipes after the kill (its process already
    gone), and one caught with only its reader open: ``shutdown`` closes every pipe, so that
    no unclosed file is left for a later garbage collection to warn about."""
    import os

    from tvm.support.popen_pool import PopenWorker

    from tcl.integrations.tvm import measure as tm

    builder = tm.PersistentLocalBuilder(max_workers=1)
    opened_late, half_open = PopenWorker(), PopenWorker()
    read, write = os.pipe()
    opened_late._reader, opened_late._writer = os.fdopen(read, "rb"), os.fdopen(write, "wb")
    read, write = os.pipe()
    os.close(write)
    half_open._proc, half_open._reader = None, os.fdopen(read, "rb")
    builder.pool._worker_map[0], builder.pool._worker_map[1] = opened_late, half_open
    tm.shutdown(builder)
    assert opened_late._reader.closed and opened_late._writer.closed
    assert half_open._reader.closed


def test_a_builder_starts_no_build_past_its_batchs_deadline() -> None:
    """A batch that may stop at a time budget's deadline (``Deadline.builds_until``) builds
    nothing once it has passed: each candidate is ``NOT_BUILT``, not a build error; a first
    round (not binding), a deadline still ahead, or no deadline build the whole batch."""
    import time

    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.deadline import Deadline

    target = tvm.target.Target(LLVM)
    inputs = [
        BuilderInput(c.sch.mod, target)
        for c in tm.random_candidates(matmul_module(16), target, 2, seed=0)
    ]
    builder = tm.PersistentLocalBuilder(max_workers=1)
    outcomes = {}
    try:
        for name, deadline in {
            "passed": Deadline(at=time.time() - 1, binding=True),
            "first round": Deadline(at=time.time() - 1, binding=False),
            "ahead": Deadline(at=time.time() + 3600, binding=True),
            "none": None,
        }.items():
            builder.deadline = deadline
            outcomes[name] = [r.error_msg for r in builder.build(inputs)]
    finally:
        tm.shutdown(builder)
    assert outcomes["passed"] == [tm.NOT_BUILT] * len(inputs)
    for name in ("first round", "ahead", "none"):
        assert outcomes[name] == [None] * len(inputs), name


def test_a_budget_bounds_how_long_one_build_may_take(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a time budget a build is cut at ``Deadline.build_timeout``, not at the builder's
    own timeout; without a budget the builder's timeout holds. The budget's timeout is lowered
    here below any build's time, so that every build of the budgeted batch is cut."""
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from tcl.integrations.tvm import deadline
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.deadline import Deadline

    monkeypatch.setattr(deadline, "BUDGET_BUILD_TIMEOUT_S", 1e-3)
    tiny = Deadline()
    tiny.start(0.0, 1e-3)  # long past: the first round's batch is still built (not binding)
    target = tvm.target.Target(LLVM)
    inputs = [
        BuilderInput(c.sch.mod, target)
        for c in tm.random_candidates(matmul_module(16), target, 2, seed=0)
    ]
    builder = tm.PersistentLocalBuilder(max_workers=1)
    try:
        builder.build(inputs[:1])  # the worker started, so that only the builds are timed
        builder.deadline = tiny
        cut = [r.error_msg for r in builder.build(inputs[1:])]  # each cut restarts the worker
        builder.deadline = None
        whole = [r.error_msg for r in builder.build(inputs)]
    finally:
        tm.shutdown(builder)
    assert cut == ["build timeout after 0.001 s"]
    assert whole == [None] * len(inputs)


def test_a_single_threaded_runner_is_pinned_to_the_last_core_it_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The last of the cores ``taskset`` leaves the process, not the machine's last core; none
    where it has one core (its worker keeps that one) or runs on several threads."""
    from tcl.integrations.tvm import measure as tm
    from tcl.tuning import platforms

    monkeypatch.setattr(platforms, "usable_cores", lambda: [0, 2])
    assert tm.runner_cores(threads=1) == (2,)
    assert tm.runner_cores(threads=2) == ()
    monkeypatch.setattr(platforms, "usable_cores", lambda: [0])
    assert tm.runner_cores(threads=1) == ()


def test_build_candidate_builds_what_tvms_default_build_builds() -> None:
    """``build_candidate`` (the build workers' build, without the tensor intrinsics' import)
    gives the LLVM IR and the machine code that MetaSchedule's ``default_build`` gives, its
    reference twin, on random programs."""
    import re
    import warnings

    import tvm
    from tvm.s_tir.meta_schedule.builder.local_builder import default_build

    from tcl.integrations.tvm import measure as tm

    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 3, seed=0)
    assert candidates
    for candidate in candidates:
        ours = tm.build_candidate(candidate.sch.mod, target, None)
        with warnings.catch_warnings():  # it calls tvm.driver.build, deprecated for tirx.build
            warnings.simplefilter("ignore", DeprecationWarning)
            stock = default_build(candidate.sch.mod, target, None)
        assert ours.inspect_source("asm") == stock.inspect_source("asm")
        # the IR's alias metadata names each buffer by its address in the compiling process
        ir = [re.sub(r"0x[0-9a-f]+", "ADDR", m.inspect_source("ll")) for m in (ours, stock)]
        assert ir[0] == ir[1]


def test_at_opt_level_sets_llvms_level_of_a_cpu_target_only() -> None:
    """A CPU (``llvm``) target gets the level asked and keeps the rest; a GPU's target, or no
    level, is the target itself."""
    import tvm

    from tcl.integrations.tvm import measure as tm

    cpu = tvm.target.Target(LLVM)
    lowered = tm.at_opt_level(cpu, 1)
    assert int(lowered.attrs["opt-level"]) == 1
    same = {str(k): str(v) for k, v in lowered.export().items() if k != "opt-level"}
    assert same == {str(k): str(v) for k, v in cpu.export().items()}
    assert tm.at_opt_level(cpu, None) is cpu
    gpu = tvm.target.Target({"kind": "cuda", "arch": "sm_90"})
    assert tm.at_opt_level(gpu, 1) is gpu


def test_a_lower_opt_level_builds_other_code_that_computes_the_same() -> None:
    """Random programs built at LLVM level 1 (``build_candidate`` with ``at_opt_level``) are
    other machine code than at TVM's 3, for at least one of them, and the builder asked for
    level 1 builds artifacts that compute what the level-3 build computes. Level 1 neither
    vectorizes nor reassociates beyond what the schedule says, so only where LLVM contracts
    multiply-adds differently can a sum of 16 products of [0, 1) values move: by a few ulps
    of a result below 16, well inside 1e-5 relative."""
    import os
    import shutil

    import numpy as np
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from tcl.integrations.tvm import measure as tm

    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 4, seed=0)
    assert candidates
    asm = [
        [tm.build_candidate(c.sch.mod, t, None).inspect_source("asm") for c in candidates]
        for t in (target, tm.at_opt_level(target, 1))
    ]
    assert asm[0] != asm[1]
    rng = np.random.default_rng(0)
    a, b = (rng.random((16, 16), dtype=np.float32) for _ in range(2))
    outputs = []
    for level in (None, 1):
        builder = tm.PersistentLocalBuilder(max_workers=1, opt_level=level)
        try:
            results = builder.build([BuilderInput(c.sch.mod, target) for c in candidates])
        finally:
            tm.shutdown(builder)
        for r in results:
            assert r.error_msg is None
            lib = tvm.runtime.load_module(r.artifact_path)
            shutil.rmtree(os.path.dirname(r.artifact_path))  # the builder's temporary folder
            dev = tvm.cpu()
            out = tvm.runtime.tensor(np.zeros((16, 16), np.float32), dev)
            lib[lib.entry_name](tvm.runtime.tensor(a, dev), tvm.runtime.tensor(b, dev), out)
            outputs.append(out.numpy())
    half = len(outputs) // 2
    for o3, o1 in zip(outputs[:half], outputs[half:], strict=True):
        np.testing.assert_allclose(o1, o3, rtol=1e-5)
        np.testing.assert_allclose(o3, a @ b, rtol=1e-5)


def test_a_quick_round_s_batch_is_built_at_its_own_level(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch the builder gets while its quick timing's ``now`` is set (the search just
    handed out a quick round's) is built at that timing's ``opt_level``; the next, a round's,
    at the builder's own (None: the target's), and both build."""
    import tvm
    from tvm.s_tir.meta_schedule.builder import BuilderInput

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.sync_runner import QuickTiming

    levels: list[int | None] = []
    real = tm.at_opt_level
    monkeypatch.setattr(tm, "at_opt_level", lambda t, level: levels.append(level) or real(t, level))
    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 1, seed=0)
    inputs = [BuilderInput(c.sch.mod, target) for c in candidates]
    builder = tm.PersistentLocalBuilder(max_workers=1)
    builder.quick = QuickTiming(opt_level=1)
    results = []
    try:
        for now in (True, False):
            builder.quick.now = now
            results += builder.build(inputs)
    finally:
        tm.shutdown(builder)
    assert levels == [1, None]
    assert len(results) == 2 and all(r.error_msg is None for r in results)


def test_the_workers_load_neither_torch_nor_the_tensor_intrinsics() -> None:
    """The build and run workers that tcl starts build and run a candidate with neither torch
    (which tvm_ffi imports wherever it is installed) nor the tensor intrinsics imported: each
    took seconds of a worker's start. This process has both."""
    import torch  # noqa: F401
    import tvm
    import tvm.s_tir.tensor_intrin

    from tcl.integrations.tvm import measure as tm

    def loaded_in_worker() -> tuple[bool, bool]:  # sent by value: the worker runs it
        import sys

        return sys.modules.get("torch") is not None, "tvm.s_tir.tensor_intrin" in sys.modules

    assert loaded_in_worker() == (True, True)
    target = tvm.target.Target(LLVM)
    candidates = tm.random_candidates(matmul_module(16), target, 1, seed=0)
    builder = tm.PersistentLocalBuilder(max_workers=1)
    evaluator = tm.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)
    runner = tm.make_runner(evaluator, 30.0, rpc=None, threads=1)
    try:
        batch = tm.build(builder, candidates, target)
        measured = tm.run(runner, batch)
        tm.cleanup(batch)
        in_builder = builder.pool.submit(loaded_in_worker).result()
        in_runner = runner.pool.submit(loaded_in_worker).result()
    finally:
        tm.shutdown(builder, runner)
    assert not batch.failures
    assert all(m.run_secs for m in measured.values()) and measured
    assert in_builder == (False, False)
    assert in_runner == (False, False)
