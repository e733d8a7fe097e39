"""tcl collect end to end on tiny shapes: records, dedup, failures, SIGKILL and resume, RPC on
loopback, CUDA without a GPU, unmeasured pools."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import tcl
from tcl.errors import TclError
from tcl.records.store import ERRORS, RECORDS, RecordStore
from tcl.tuning import platforms
from tcl.tuning.collect import CollectSummary, MeasureProtocol, collect

pytestmark = pytest.mark.tvm

PLATFORM = "cpu-x86-64-1t"


def _record_keys(directory: Path) -> list[tuple[int, str]]:
    lines = (directory / RECORDS).read_text().splitlines()
    return [(r[0], json.dumps(r[1][0], separators=(",", ":"))) for r in map(json.loads, lines)]


def test_collect_stores_distinct_measured_programs(tmp_path: Path) -> None:
    summary = collect(
        ["bert_tiny"],
        platforms.get(PLATFORM),
        tmp_path,
        programs_per_task=4,
        max_tasks=3,
        tiny=True,
        progress=False,
    )
    keys = _record_keys(tmp_path)
    assert len(keys) == len(set(keys)) == summary.records_total == summary.measured
    per_task = Counter(w for w, _ in keys)
    assert len(per_task) == 3 and max(per_task.values()) == 4
    rs = tcl.read_records(tmp_path)
    assert len(rs) == len(keys) and (rs.columns["error"] == 0).all()
    assert (rs.lengths > 0).all() and rs.report.unknown_kinds == {}
    assert json.loads(rs.targets[0])["mcpu"] == "x86-64"
    manifest = RecordStore(tmp_path).manifest
    assert manifest["platform"]["name"] == PLATFORM and manifest["protocol"]["repeat"] == 3
    assert all("bert_tiny" in t["networks"] and t["flops"] > 0 for t in manifest["tasks"].values())
    assert all(len(rs.costs_of(i)) == 3 for i in range(len(rs)))  # every repeat is stored
    assert summary.noise_pairs > 0 and summary.median_cv < 1.0


def test_failures_are_recorded_not_fatal(tmp_path: Path) -> None:
    protocol = MeasureProtocol(build_timeout_s=0.001)  # no build can finish
    summary = collect(
        ["bert_tiny"],
        platforms.get(PLATFORM),
        tmp_path,
        programs_per_task=2,
        max_tasks=3,
        tiny=True,
        progress=False,
        protocol=protocol,
    )
    assert summary.failed == summary.measured >= 3
    rs = tcl.read_records(tmp_path)
    assert (rs.columns["error"] == 8).all() and len(rs) == summary.measured
    errors = [json.loads(line) for line in (tmp_path / ERRORS).read_text().splitlines()]
    assert len(errors) == len(rs) and {e["error"] for e in errors} == {"timeout"}


def _collect_command(out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tcl.cli",
        "collect",
        "--network",
        "bert_tiny",
        "--tiny",
        "--platform",
        PLATFORM,
        "--programs-per-task",
        "6",
        "--max-tasks",
        "4",
        "--out",
        str(out),
        *extra,
    ]


def _collector_with_records(tmp_path: Path, wanted: int) -> tuple[subprocess.Popen[bytes], Path]:
    """A `tcl collect` in a session of its own, once it has stored ``wanted`` records."""
    records = tmp_path / f"{PLATFORM}-{platforms.get(PLATFORM).id}" / RECORDS
    proc = subprocess.Popen(
        _collect_command(tmp_path),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline and (
        not records.exists() or len(records.read_text().splitlines()) < wanted
    ):
        time.sleep(0.05)
    return proc, records


def test_resume_after_sigkill(tmp_path: Path) -> None:
    out_dir = tmp_path / f"{PLATFORM}-{platforms.get(PLATFORM).id}"
    proc, records = _collector_with_records(tmp_path, 7)
    os.killpg(proc.pid, signal.SIGKILL)  # the collector and its build/run workers, mid-task
    proc.wait()
    before = records.read_bytes()
    assert before.count(b"\n") >= 7
    done = subprocess.run(
        _collect_command(tmp_path), capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    after = records.read_bytes()
    complete_before = before[: before.rfind(b"\n") + 1]
    assert after.startswith(complete_before)  # nothing stored was lost or rewritten
    keys = _record_keys(out_dir)
    assert len(keys) == len(set(keys))  # nothing was measured twice
    again = subprocess.run(
        _collect_command(tmp_path), capture_output=True, text=True, timeout=600, check=False
    )
    assert again.returncode == 0 and "measured 0 programs" in again.stdout
    assert records.read_bytes() == after


def test_measure_through_rpc_on_loopback(
    tmp_path: Path, rpc_loopback: tuple[str, int, str]
) -> None:
    summary = collect(
        ["bert_tiny"],
        platforms.get(PLATFORM),
        tmp_path,
        programs_per_task=2,
        max_tasks=3,
        tiny=True,
        progress=False,
        rpc=rpc_loopback,
    )
    assert summary.measured >= 3 and summary.failed == 0
    rs = tcl.read_records(tmp_path)
    assert (rs.columns["error"] == 0).all() and (rs.columns["mean_cost"] < 1).all()


def test_cuda_without_gpu_fails_clearly_but_pools(tmp_path: Path) -> None:
    cuda = platforms.get("cuda-a100")
    with pytest.raises(TclError, match="needs an NVIDIA GPU"):
        collect(
            ["bert_tiny"],
            cuda,
            tmp_path,
            programs_per_task=2,
            max_tasks=1,
            tiny=True,
            progress=False,
        )
    summary = collect(
        ["bert_tiny"],
        cuda,
        tmp_path,
        programs_per_task=3,
        max_tasks=2,
        tiny=True,
        progress=False,
        pool_only=True,
    )
    assert summary.measured == summary.records_total > 0
    pool = tcl.read_records(tmp_path / "pool")
    assert (pool.columns["error"] == -1).all()
    assert json.loads(pool.targets[0])["kind"] == "cuda"
    assert pool.tasks.hardware_params[0, 7] == 32  # warp size, from the CUDA target


def test_workers_die_with_a_killed_collector(tmp_path: Path) -> None:
    import psutil

    proc, _ = _collector_with_records(tmp_path, 3)
    try:
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert workers, "the collector runs its builds and measurements in worker processes"
        proc.kill()  # the collector alone, as the kernel's OOM killer or a user's kill -9 would
        proc.wait()
        deadline = time.time() + 20
        alive = workers
        while alive and time.time() < deadline:
            alive = [w for w in alive if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
            time.sleep(0.2)
        assert not alive, [w.cmdline() for w in alive]
    finally:
        with contextlib.suppress(ProcessLookupError):  # what is left of the group, on failure
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_second_collector_on_the_same_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tcl.cli import main

    out_dir = tmp_path / f"{PLATFORM}-{platforms.get(PLATFORM).id}"
    out_dir.mkdir()
    code = (
        "import sys, time; from tcl.records.store import RecordStore; "
        "s = RecordStore(sys.argv[1]); print('ready', flush=True); time.sleep(120)"
    )
    first = subprocess.Popen(
        [sys.executable, "-c", code, str(out_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "ready"
        assert main(_collect_command(tmp_path)[3:]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and f"process {first.pid} is writing; one writer at a time" in err[0]
    finally:
        first.kill()
        first.wait()
        assert first.stdout is not None
        first.stdout.close()
    assert not (out_dir / RECORDS).exists()  # the refused collector wrote nothing


def test_candidates_are_built_by_a_worker_on_each_core_the_process_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build worker on each core ``taskset`` leaves the process, at least 2 (on one core a
    quick round ended no sooner with one) and at most ``MOST_BUILD_WORKERS``."""
    from tcl.tuning.collect import MOST_BUILD_WORKERS

    cpu = platforms.get(PLATFORM)
    for cores, workers in ((1, 2), (3, 3), (4 * MOST_BUILD_WORKERS, MOST_BUILD_WORKERS)):
        monkeypatch.setattr(platforms, "usable_cores", lambda n=cores: list(range(n)))
        assert MeasureProtocol.of(cpu).build_workers == workers
    assert MeasureProtocol.of(cpu, build_workers=3).build_workers == 3


def test_measurement_workers_start_in_the_background_each_build_worker_its_own_process() -> None:
    """``start_measurement_workers`` hands back a future of the builder and runner; the
    builder's workers are started before any build, one process each."""
    from tcl.integrations.tvm import measure as tm
    from tcl.tuning.collect import start_measurement_workers

    protocol = MeasureProtocol.of(platforms.get(PLATFORM), repeat=1, min_repeat_ms=0)
    workers = start_measurement_workers(tm, protocol, threads=1)
    builder, runner = workers.result(timeout=120)
    try:
        assert builder.max_workers == protocol.build_workers
        fresh = tm.PersistentLocalBuilder(max_workers=2)
        try:
            pids = {job.result(timeout=120) for job in fresh.start()}
        finally:
            tm.shutdown(fresh)
        assert len(pids) == 2 and os.getpid() not in pids
    finally:
        tm.shutdown(builder, runner)


def test_the_summary_says_when_too_few_programs_were_measured_twice_to_rank() -> None:
    summary = CollectSummary(32, 0, 100.0, 32, 4, 0.0003, float("nan"), 8)
    assert summary.lines() == [
        "measured 32 programs (0 failed) in 100 s (0.32/s); the store holds 32 records of 4 tasks",
        "noise: median CV of repeats 0.0003; Spearman between two measurements not yet "
        "(< 3 a task) over 8 re-measured programs",
    ]
    ranked = CollectSummary(32, 0, 100.0, 32, 4, 0.0165, 0.9061, 12).lines()[1]
    assert ranked.endswith("measurements 0.906 over 12 re-measured programs")
