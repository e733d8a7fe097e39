"""The append-only record store: resume, torn lines, dedup, manifest."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import tcl
from tcl.errors import TclError
from tcl.records.store import ERRORS, NOISE, RECORDS, WORKLOADS, RecordStore

TARGET = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}
TRACE = [[["SamplePerfectTile", ["l0"], [2, 64], ["v1", "v2"]]], [[0, [4, 16]]]]


def _trace(i: int) -> list[object]:
    return [[["SamplePerfectTile", ["l0"], [2, 64], ["v1", "v2"]]], [[0, [i, 64 // max(i, 1)]]]]


def test_append_and_resume(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    w = store.workload(["111", "AAAA"])
    assert store.workload(["111", "AAAA"]) == w == 0
    for i in range(3):
        trace = _trace(i)
        store.add(w, trace, json.dumps(trace, separators=(",", ":")), [1e-3 * (i + 1)], TARGET, [])
    store.add(
        w,
        _trace(9),
        json.dumps(_trace(9), separators=(",", ":")),
        None,
        TARGET,
        [],
        "build",
        "boom",
    )
    again = RecordStore(tmp_path)
    assert again.count("111") == 4 and again.records == 4
    assert again.has("111", json.dumps(_trace(1), separators=(",", ":")))
    assert not again.has("111", json.dumps(_trace(5), separators=(",", ":")))
    assert again.workload(["222", "BBBB"]) == 1
    rs = tcl.read_records(tmp_path)
    assert rs.columns["error"].tolist() == [0, 0, 0, 8]
    assert [e["error"] for e in again.errors()] == ["build"]


def test_torn_last_line_is_cut(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    w = store.workload(["111", "AAAA"])
    store.add(w, TRACE, json.dumps(TRACE, separators=(",", ":")), [1e-3], TARGET, [])
    with open(tmp_path / RECORDS, "a") as f:
        f.write('[0,[[[["Split"')  # a kill in the middle of a write
    with open(tmp_path / WORKLOADS, "a") as f:
        f.write('["333","CC')
    again = RecordStore(tmp_path)
    assert again.records == 1 and again.num_workloads == 1
    assert (tmp_path / RECORDS).read_text().endswith("\n")
    assert len(tcl.read_records(tmp_path)) == 1


def test_unmeasured_and_noise(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    w = store.workload(["111", "AAAA"])
    store.add_unmeasured(w, TRACE, "k", TARGET, [])
    store.add_noise(w, "k", [1.0, 1.1], [1.05, 1.0])
    rs = tcl.read_records(tmp_path)
    assert rs.columns["error"].tolist() == [-1]
    (entry,) = RecordStore(tmp_path).noise()
    assert entry["first"] == [1.0, 1.1] and "load" in entry and len(entry["trace"]) == 16
    assert (tmp_path / NOISE).exists() and not (tmp_path / ERRORS).exists()


def test_manifest_merges_tasks(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.update_manifest(
        {"tasks": {"1": {"name": "a", "networks": {"n1": 2}}}, "protocol": {"x": 1}}
    )
    store.update_manifest(
        {"tasks": {"1": {"name": "a", "networks": {"n2": 1}}, "2": {"name": "b", "networks": {}}}}
    )
    manifest = RecordStore(tmp_path).manifest
    assert manifest["tasks"]["1"]["networks"] == {"n1": 2, "n2": 1}
    assert set(manifest["tasks"]) == {"1", "2"} and manifest["protocol"] == {"x": 1}


def _hold(directory: Path) -> subprocess.Popen[str]:
    """Another process that opens the store for writing and keeps it open."""
    code = (
        "import sys, time; from tcl.records.store import RecordStore; "
        "s = RecordStore(sys.argv[1]); print('ready', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(directory)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_one_writer_at_a_time_and_a_killed_writer_never_blocks(tmp_path: Path) -> None:
    store = RecordStore(tmp_path)
    store.add(store.workload(["111", "AAAA"]), TRACE, "k0", [1e-3], TARGET, [])
    before = (tmp_path / RECORDS).read_bytes()
    again = RecordStore(tmp_path)  # the same process may open it twice
    del store, again  # the last holder in this process lets go
    holder = _hold(tmp_path)
    try:
        with pytest.raises(TclError, match=f"process {holder.pid} is writing; one writer"):
            RecordStore(tmp_path)
    finally:
        holder.send_signal(signal.SIGKILL)  # flock dies with its holder
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()
    assert RecordStore(tmp_path).records == 1  # the killed holder's lock is gone
    assert (tmp_path / RECORDS).read_bytes() == before  # the refused writer touched nothing
