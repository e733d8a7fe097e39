"""The append-only record store: resume, torn lines, dedup, manifest."""

from __future__ import annotations

import json
from pathlib import Path

import tcl
from tcl.store import ERRORS, NOISE, RECORDS, WORKLOADS, RecordStore

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
