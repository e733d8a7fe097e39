"""The tcl command line: records stats/convert, quickstart, and error reporting."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.cli import main


def test_records_stats_text_and_json(ansor_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "stats", str(ansor_dir)]) == 0
    text = capsys.readouterr().out
    assert "records      53 (53 measured, 0 failed) from 5 file(s)" in text
    assert "skipped      none" in text and "records/s" in text
    assert main(["records", "stats", str(ansor_dir), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 53 and summary["tasks"] == 53 and len(summary["targets"]) == 4
    assert sum(summary["steps"]["histogram"].values()) == 53


def test_records_stats_lenient_reports_skips(
    tmp_path: Path, ansor_lines: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.json"
    path.write_bytes(ansor_lines[0] + b"\n" + ansor_lines[1][:40] + b"\n")
    assert main(["records", "stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: invalid_json" in err
    assert main(["records", "stats", str(path), "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "skipped      invalid_json: 1" in out and f"{path}:2" in out


def test_records_convert(
    ansor_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rs.tcl"
    assert main(["records", "convert", str(ansor_dir), "-o", str(out)]) == 0
    assert "wrote 53 records" in capsys.readouterr().out
    assert len(tcl.RecordSet.load(out)) == 53


def test_quickstart_tunes_with_the_base_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    args = ["quickstart", "--tiny", "--trials", "24", "--work-dir", str(tmp_path / "work")]
    assert main([*args, "--json", str(report)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "record core read 96 bundled MetaSchedule records" in out
    assert "base_model.pt" in out and "PyTorch eager" in out and "interleaved rounds" in out
    assert f"MetaSchedule's log: {tmp_path / 'work' / 'logs'}" in out
    # MetaSchedule's INFO log and task tables went to the work directory, not the terminal.
    assert "Logging directory" not in out + captured.err
    assert len((out + captured.err).splitlines()) < 60
    assert any((tmp_path / "work" / "logs").glob("*task_scheduler.log"))
    data = json.loads(report.read_text())
    assert data["cost_model"] == "tcl" and data["latency_ms"] > 0
    assert data["max_abs_error"] < 1e-3  # the tuned module computes what PyTorch does
    assert len(data["curve"]) >= 1
    # Three contenders timed in the same interleaved rounds; the medians are the headline.
    assert {k: len(v) for k, v in data["samples_ms"].items()} == {
        "tuned": 5,
        "untuned": 5,
        "torch": 5,
    }
    assert data["torch_ms"] == pytest.approx(float(np.median(data["samples_ms"]["torch"])))
    assert data["machine_load"]["other_cores"] >= 0 and data["threads"] == 2


def test_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "stats", str(tmp_path / "nope.json")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
