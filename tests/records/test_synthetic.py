"""tcl's own Ansor-format logs: the layout of TVM's tutorial logs, every step kind, a seed."""

from __future__ import annotations

import json
from pathlib import Path

import tcl
from tcl.records.reference import read_records_reference
from tcl.records.synthetic import LAYOUT, ansor_lines, write_ansor_logs

from conftest import assert_same_records

# Ansor's step kinds, as TVM's auto_scheduler serializes them.
ANSOR_STEP_KINDS = {
    "AN", "FU", "PR", "RE", "SP", "FSP", "FFSP", "SA", "CA", "CI", "CR", "CHR", "CHW", "RF"
}  # fmt: skip


def test_layout_of_the_tutorial_logs(tmp_path: Path) -> None:
    out = write_ansor_logs(tmp_path / "logs")
    assert sorted(p.name for p in out.iterdir()) == sorted(LAYOUT)
    for name, (records, comments) in LAYOUT.items():
        lines = (out / name).read_text().splitlines()
        assert sum(ln.startswith("#") for ln in lines) == comments
        assert len(lines) == records + comments


def test_every_step_kind_both_key_styles_and_targets(tmp_path: Path) -> None:
    rs = tcl.read_records(write_ansor_logs(tmp_path))
    assert rs.report.skipped == {} and rs.report.unknown_kinds == {}
    records = [json.loads(ln) for name in LAYOUT for ln in ansor_lines(name) if ln[0] != "#"]
    kinds = {step[0] for r in records for step in r["i"][1][1]}
    assert kinds == ANSOR_STEP_KINDS
    keys = [json.loads(r["i"][0][0]) for r in records]
    assert any(isinstance(k[1], int) for k in keys) and any(isinstance(k[1], list) for k in keys)
    assert {t.split()[0] for t in rs.targets} == {"llvm", "cuda"}
    # Every tile size divides what it splits, as the tuner's own schedules do.
    for r in records:
        for step in r["i"][1][1]:
            if step[0] == "SP":
                product = 1
                for factor in step[4]:
                    product *= factor
                assert step[3] % product == 0, step


def test_seeded_and_read_alike_by_both_readers(tmp_path: Path) -> None:
    a = write_ansor_logs(tmp_path / "a", seed=3)
    b = write_ansor_logs(tmp_path / "b", seed=3)
    c = write_ansor_logs(tmp_path / "c", seed=4)
    assert all((a / n).read_bytes() == (b / n).read_bytes() for n in LAYOUT)
    assert any((a / n).read_bytes() != (c / n).read_bytes() for n in LAYOUT)
    assert_same_records(tcl.read_records(a), read_records_reference(a))
