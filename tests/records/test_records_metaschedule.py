"""A real MetaSchedule database (tiny tune in the test) read three ways: the C++ core, the
Python twin, and TVM's own JSONDatabase."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.records.reference import read_records_reference
from tcl.records.tokenizer import DEFAULT_SKIP_KINDS

from conftest import assert_same_records

pytestmark = pytest.mark.tvm


def test_core_and_twin_agree_on_a_real_database(ms_database: Path) -> None:
    rs = tcl.read_records(ms_database)
    assert len(rs) == 16
    assert_same_records(rs, read_records_reference(ms_database))
    assert rs.tasks.format == ["metaschedule"]
    assert json.loads(rs.targets[0])["mcpu"] == "x86-64"
    assert rs.tasks.hardware_params[0, 0] == 2
    assert rs.report.unknown_kinds == {}
    names = {rs.vocab.kinds[i] for i in rs.columns["token_kinds"]}
    assert {"SamplePerfectTile", "SampleCategorical", "Annotate:meta_schedule.parallel"} <= names
    assert not names & set(DEFAULT_SKIP_KINDS)


def test_matches_tvm_json_database(ms_database: Path) -> None:
    from tvm.s_tir import meta_schedule as ms

    rs = tcl.read_records(ms_database)
    records = ms.database.JSONDatabase(work_dir=str(ms_database)).get_all_tuning_records()
    assert len(records) == len(rs)
    # JSONDatabase returns records sorted by speed; compare as multisets of (costs, trace length).
    theirs = sorted(
        (
            tuple(float(x) for x in r.run_secs),
            sum(inst.kind.name not in DEFAULT_SKIP_KINDS for inst in r.trace.insts),
            len(r.trace.decisions),
        )
        for r in records
    )
    lines = (ms_database / "database_tuning_record.json").read_text().splitlines()
    decisions = [len(json.loads(line)[1][0][1]) for line in lines]
    ours = sorted(
        (tuple(rs.costs_of(i).tolist()), int(rs.columns["num_steps"][i]), decisions[i])
        for i in range(len(rs))
    )
    assert ours == theirs
    assert np.isnan(rs.columns["timestamp"]).all() and (rs.columns["error"] == 0).all()
    assert str(records[0].workload.as_json()[0]) == rs.tasks.workload_key[0]
