"""tcl.integrations.tvm.transplant: a task's own program replays on it unchanged; another
task's program of the same blocks replays with its tile decisions mended to divide the new
loops, the inner tiles kept where they divide; programs of other blocks are left out, the same
program is offered once, the most decisions kept first; a database's fastest program of each
workload is the donor, failed ones never; donors saved and loaded again replay alike, and a file
that is not a donor file is named; a task's transplants for a tuning run keep enough of their
donors' tile decisions, the cost model breaking ties; the packaged donor file loads."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tcl.errors import TclError
from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.transplant import (
    DONOR_LIMIT,
    MIN_KEPT,
    Donor,
    Transplants,
    best_programs,
    donors_path,
    kept_share,
    load_donors,
    loop_extents,
    packaged_donors,
    save_donors,
    transplanted,
)

from conftest import X86_TARGET as TARGET
from conftest import matmul_module as _matmul
from conftest import random_programs as _programs
from conftest import scored_by_trace
from conftest import space_postprocs as _postprocs

pytestmark = pytest.mark.tvm


def _donors(mod: Any, n: int, seed: int = 1) -> list[Donor]:
    return [Donor.of(c.sch.trace, mod) for c in _programs(mod, n, seed)]


def _key(donor: Donor) -> str:
    """The trace key of a donor's program replayed on its own task."""
    [graft] = transplanted(_matmul(64), _postprocs(_matmul(64)), [donor])
    return tm.text_of_trace(graft.candidate.sch.trace)


def _tiles(trace: Any) -> list[list[int]]:
    return [
        [int(x) for x in trace.decisions[inst]]
        for inst in trace.insts
        if inst.kind.name == "SamplePerfectTile" and inst in trace.decisions
    ]


def test_a_tasks_own_program_replays_on_it_unchanged() -> None:
    mod = _matmul(64)
    [own] = _donors(mod, 1)
    [graft] = transplanted(mod, _postprocs(mod), [own])
    assert graft.kept == 1.0 and own.likeness(own.extents) == 1.0
    assert _tiles(graft.candidate.sch.trace) == own.tiles
    assert graft.candidate.sch.mod.script() == _programs(mod, 1)[0].sch.mod.script()


def test_another_shapes_program_keeps_the_inner_tiles_that_divide() -> None:
    donor_mod, mod = _matmul(64), _matmul(96)
    donors = _donors(donor_mod, 6)
    grafts = transplanted(mod, _postprocs(mod), donors)
    assert grafts and all(g.kept < 1.0 for g in grafts)  # the outer tiles take what is left
    for graft in grafts:
        for tiles in _tiles(graft.candidate.sch.trace):
            product = 1
            for factor in tiles:
                product *= factor
            assert product == 96, tiles  # loops of 96 (i, j, k), perfectly tiled
    grafted = {tm.text_of_trace(g.candidate.sch.trace): g for g in grafts}
    for donor in donors:
        tiles = donor.tiles
        replayed = transplanted(mod, _postprocs(mod), [donor])[0]
        assert tm.text_of_trace(replayed.candidate.sch.trace) in grafted
        for ours, theirs in zip(tiles, _tiles(replayed.candidate.sch.trace), strict=True):
            if 96 % ours[-1] == 0:
                assert theirs[-1] == ours[-1]  # the innermost tile survives where it divides
        assert replayed.kept == kept_share(donor, replayed.candidate.sch.trace)


def test_other_blocks_are_left_out_and_each_program_is_offered_once() -> None:
    mod = _matmul(64)
    own = _donors(mod, 3)
    renamed = _donors(_matmul(64, name="D"), 3)  # block D, not C
    smaller = _donors(_matmul(32), 3)
    grafts = transplanted(mod, _postprocs(mod), smaller + renamed + own + own)
    keys = [tm.text_of_trace(g.candidate.sch.trace) for g in grafts]
    assert len(keys) == len(set(keys))
    assert {_key(d) for d in own} <= set(keys)
    assert transplanted(mod, _postprocs(mod), renamed) == []
    kept = [g.kept for g in grafts]
    assert kept == sorted(kept, reverse=True) and kept[0] == 1.0 and kept[-1] < 1.0


def test_the_donor_is_each_workloads_fastest_program_never_a_failed_one() -> None:
    import tvm
    from tvm.s_tir import meta_schedule as ms

    database = ms.database.MemoryDatabase()
    target = tvm.target.Target(TARGET)
    traces = {}
    for n, seconds in ((64, [3e-3, 1e-3, 1e10]), (32, [1e10, 1e10]), (48, [2e-3])):
        mod = _matmul(n)
        workload = database.commit_workload(mod)
        programs = _programs(mod, len(seconds), seed=n)
        for candidate, secs in zip(programs, seconds, strict=True):
            record = ms.database.TuningRecord(
                candidate.sch.trace, workload, [secs], target, candidate.args_info
            )
            database.commit_tuning_record(record)
        traces[n] = [json.dumps(Donor.of(c.sch.trace, mod).trace) for c in programs]
    best = {json.dumps(d.trace): d for d in best_programs(database)}
    assert set(best) == {traces[64][1], traces[48][0]}  # 32's programs all failed
    assert best[traces[48][0]].extents == {"C": ("48", "48", "48")}
    only = {tm.workload_key(_matmul(48))}
    assert [json.dumps(d.trace) for d in best_programs(database, only)] == [traces[48][0]]


def test_a_limit_replays_the_most_alike_donors_first() -> None:
    mod = _matmul(64)
    near, far = _donors(_matmul(64), 2, seed=3), _donors(_matmul(32), 4, seed=4)
    extents = loop_extents(mod)
    assert [d.likeness(extents) for d in near + far] == [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    grafts = transplanted(mod, _postprocs(mod), far + near, limit=2)
    assert {tm.text_of_trace(g.candidate.sch.trace) for g in grafts} == {_key(d) for d in near}
    assert len(transplanted(mod, _postprocs(mod), far + near)) > 2


def test_donors_saved_and_loaded_replay_alike(tmp_path: Path) -> None:
    mod = _matmul(96)
    donors = _donors(_matmul(64), 4) + _donors(_matmul(48), 2)
    path = tmp_path / "donors.json.gz"
    assert save_donors(path, donors, {"stores": ["a"]}) > 0
    again = load_donors(path)
    assert [(d.trace, d.extents) for d in again] == [(d.trace, d.extents) for d in donors]

    def replayed(ds: list[Donor]) -> list[tuple[str, float]]:
        return [
            (tm.text_of_trace(g.candidate.sch.trace), g.kept)
            for g in transplanted(mod, _postprocs(mod), ds)
        ]

    assert replayed(again) == replayed(donors) and replayed(donors)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not gzip", "not a gzipped JSON donor file"),
        (gzip.compress(b"{"), "not a gzipped JSON donor file"),
        (gzip.compress(b'{"format": "other"}'), "not a tcl donor file"),
        (gzip.compress(b'{"format": "tcl-donors", "version": 9}'), "donor file version 9"),
        (
            gzip.compress(b'{"format": "tcl-donors", "version": 1, "donors": [{"trace": 3}]}'),
            "donor 0 is malformed",
        ),
    ],
)
def test_a_file_that_is_not_a_donor_file_is_named(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.json.gz"
    path.write_bytes(content)
    with pytest.raises(TclError, match=message) as caught:
        load_donors(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_likeness_is_read_on_the_main_block_not_the_epilogue() -> None:
    conv = {"conv2d_nchw": ("1", "64", "56", "56", "64", "3", "3")}
    epilogue = {"T_add": ("1", "64", "56", "56"), "T_relu": ("1", "64", "56", "56")}
    donor = Donor([[], []], {**conv, **epilogue})
    other_channels = {"conv2d_nchw": ("1", "64", "56", "56", "128", "3", "3"), **epilogue}
    assert donor.likeness({**conv}) == 1.0  # the same loops, another epilogue
    assert donor.likeness(other_channels) == 6 / 7
    assert donor.likeness(epilogue) == 0.0  # the same epilogue, no such convolution
    assert Donor([[], []], {}).likeness(epilogue) == 0.0


def test_a_tasks_transplants_keep_enough_and_the_cost_model_breaks_ties() -> None:
    import tvm

    mod = _matmul(64)
    context = tm.replay_context(mod, tvm.target.Target(TARGET))
    context.generate_design_space()
    own, other = _donors(mod, 4), _donors(_matmul(96), 4, seed=2)
    keys = [_key(d) for d in own]
    # The cost model's favourite among the programs that keep every decision is picked first.
    favourite = {keys[2]: 2.0, keys[1]: 1.0}
    picks = Transplants(other + own, count=2).ranked(
        context, scored_by_trace(lambda key: favourite.get(key, 0.0))
    )
    assert [tm.text_of_trace(t.candidate.sch.trace) for t in picks] == [keys[2], keys[1]]
    assert [t.kept for t in picks] == [1.0, 1.0]  # the task's own programs: every decision
    # The round of transplants after the quick one takes the next, in the same order.
    both = Transplants(other + own, count=1, later=2).ranked(
        context, scored_by_trace(lambda key: favourite.get(key, 0.0))
    )
    assert [tm.text_of_trace(t.candidate.sch.trace) for t in both][:2] == [keys[2], keys[1]]
    assert len(both) == 3 and tm.text_of_trace(both[2].candidate.sch.trace) in keys
    # Without a cost model: the most kept, in the donors' order.
    [first] = Transplants(other + own, count=1).ranked(context)
    assert tm.text_of_trace(first.candidate.sch.trace) == keys[0]
    # A transplant that keeps too little of its donor is never offered.
    kept = [g.kept for g in transplanted(mod, list(context.space_generator.postprocs), other)]
    floor = max(kept) + 1e-9
    assert Transplants(other, count=4, min_kept=floor).ranked(context) == []
    assert len(Transplants(other, count=8, min_kept=0.0).ranked(context)) == len(kept)


def test_the_packaged_donor_file_loads_and_fits_a_matmul() -> None:
    donors = load_donors(donors_path("cpu"))
    assert len(donors) > 1000 and all(d.extents for d in donors)
    # A batched matmul as the zoo's networks have them (int64 loops, block "matmul")
    import tvm
    from tvm import te, tirx

    z, n, m = (tirx.IntImm("int64", x) for x in (4, 64, 32))
    a = te.placeholder((z, n, m), name="A")
    b = te.placeholder((z, m, n), name="B")
    k = te.reduce_axis((0, m), name="k")
    c = te.compute((z, n, n), lambda q, i, j: te.sum(a[q, i, k] * b[q, k, j], axis=k), "matmul")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    grafts = transplanted(mod, _postprocs(mod), donors, limit=16)
    assert grafts and grafts[0].kept >= 0.5
    with pytest.raises(ValueError, match="no donor file for device 'cuda'"):
        donors_path("cuda")


def test_a_blocked_run_takes_the_packaged_blocked_donors_beside_the_devices() -> None:
    import torch
    import tvm

    from tcl.tuning.layout import with_conv_layout
    from tcl.zoo.extract import extracted_tasks, import_network

    nchw = load_donors(donors_path("cpu"))
    assert packaged_donors("cpu") == nchw and packaged_donors("cpu", "NCHW8c") == nchw
    both = packaged_donors("cpu", "NCHW16c")
    assert both[: len(nchw)] == nchw and len(both) > len(nchw)
    assert any("conv2d_NCHWc" in d.blocks for d in both[len(nchw) :])
    assert not any("conv2d_NCHWc" in d.blocks for d in nchw)
    # a blocked convolution's block is none that an NCHW donor has: only blocked donors replay
    # on it keeping enough of their tile decisions to be measured
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU()).eval()
    blocked = with_conv_layout(import_network(net, (torch.randn(1, 32, 14, 14),)), "NCHW16c")
    tasks = extracted_tasks(blocked, tvm.target.Target(TARGET))
    [task] = [t for t in tasks if "NCHWc" in t.task_name]
    mod = task.dispatched[0]
    postprocs = _postprocs(mod)
    assert all(g.kept < MIN_KEPT for g in transplanted(mod, postprocs, nchw, limit=DONOR_LIMIT))
    grafts = transplanted(mod, postprocs, both, limit=DONOR_LIMIT)
    assert grafts and grafts[0].kept >= MIN_KEPT
