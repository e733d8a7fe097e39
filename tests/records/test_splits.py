"""The three train/test splits: disjointness, coverage and seeding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tcl


@pytest.fixture(scope="module")
def records(ansor_lines: list[bytes], tmp_path_factory: pytest.TempPathFactory) -> tcl.RecordSet:
    path = tmp_path_factory.mktemp("splits") / "log.json"
    path.write_bytes(b"\n".join(ansor_lines * 10))
    return tcl.read_records(path)


def _lines(rs: tcl.RecordSet) -> set[int]:
    return set(rs.columns["line"].tolist())


def test_within_task(records: tcl.RecordSet) -> None:
    train, test = tcl.split_within_task(records, 0.2, seed=0)
    assert len(train) + len(test) == len(records)
    assert not _lines(train) & _lines(test)
    assert set(test.columns["task"]) <= set(train.columns["task"])
    assert 0.15 < len(test) / len(records) < 0.25
    again = tcl.split_within_task(records, 0.2, seed=0)[1]
    other = tcl.split_within_task(records, 0.2, seed=1)[1]
    assert _lines(again) == _lines(test) != _lines(other)


def test_by_task(records: tcl.RecordSet) -> None:
    train, test = tcl.split_by_task(records, 0.25, seed=3)
    assert len(train) + len(test) == len(records)
    assert not set(train.columns["task"]) & set(test.columns["task"])
    assert len(set(test.columns["task"])) == round(len(records.tasks) * 0.25)
    assert _lines(tcl.split_by_task(records, 0.25, seed=3)[1]) == _lines(test)


def test_by_target(records: tcl.RecordSet) -> None:
    cuda = [t for t in records.targets if t.startswith("cuda")]
    train, test = tcl.split_by_target(records, cuda)
    assert {records.targets[t] for t in test.columns["target"]} == set(cuda)
    assert not {records.targets[t] for t in train.columns["target"]} & set(cuda)
    _, drawn = tcl.split_by_target(records, seed=0)
    assert len(np.unique(drawn.columns["target"])) == 1


def test_bad_fractions(records: tcl.RecordSet) -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        tcl.split_within_task(records, 1.5)
    with pytest.raises(ValueError, match="at least 2 tasks"):
        tcl.split_by_task(records.filter(tasks=[0]), 0.5)


def test_save_after_split(records: tcl.RecordSet, tmp_path: Path) -> None:
    _, test = tcl.split_within_task(records, 0.3, seed=0)
    test.save(tmp_path / "test.tcl")
    back = tcl.RecordSet.load(tmp_path / "test.tcl")
    np.testing.assert_array_equal(back.kinds, test.kinds)
    np.testing.assert_array_equal(back.costs, test.costs)
