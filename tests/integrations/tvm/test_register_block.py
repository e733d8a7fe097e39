"""tcl.integrations.tvm.register_block: a multi-level tiled block's tile decisions are rewritten
to a register block (the innermost spatial tile one vector, the one before it up to 8 rows,
the reductions' inner tiles 1, each the largest factor that divides its loop) and nothing else
changes; a block without two spatial loops tiled in four, or already so blocked, gives nothing;
the rewrite of a matmul's random program replays on its task and computes what the original
does; the lanes are the CPU target's 32-bit vector lanes, and a GPU's target has none."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tcl.integrations.tvm.register_block import (
    ROWS,
    RegisterBlock,
    blocked_trace,
    vector_lanes,
    without_postprocessing,
)

from conftest import X86_TARGET, matmul_module, random_programs, space_postprocs


def _matmul_trace(i: list[int], j: list[int], k: list[int], unroll: int = 1) -> list[Any]:
    """A multi-level tiling's trace as MetaSchedule writes it (JSON), its decisions given."""
    insts = [
        ["GetSBlock", [], ["C", "main"], ["b0"]],
        ["GetLoops", ["b0"], [], ["l1", "l2", "l3"]],
        ["SamplePerfectTile", ["l1"], [4, 64], ["v4", "v5", "v6", "v7"]],
        ["SamplePerfectTile", ["l2"], [4, 64], ["v8", "v9", "v10", "v11"]],
        ["SamplePerfectTile", ["l3"], [2, 64], ["v12", "v13"]],
        ["SampleCategorical", [], [[0, 16, 64, 512], [0.25] * 4], ["v14"]],
    ]
    return [insts, [[2, i], [3, j], [4, k], [5, unroll]]]


def _decisions(trace: list[Any]) -> list[Any]:
    return [value for _, value in trace[1]]


def test_a_matmul_is_blocked_to_rows_by_one_vector_across_its_reduction() -> None:
    trace = _matmul_trace([1, 2, 64, 1], [8, 1, 1, 64], [32, 4], unroll=1)
    blocked = blocked_trace(trace, lanes=16)
    assert blocked is not None
    assert _decisions(blocked) == [[8, 2, 1, 8], [32, 1, 1, 16], [128, 1], 1]
    assert blocked[0] == trace[0]  # the instructions as they were
    assert _decisions(trace) == [[1, 2, 64, 1], [8, 1, 1, 64], [32, 4], 1]  # not changed


def test_each_tile_is_the_largest_factor_that_divides_its_loop() -> None:
    # 28 rows (7 divides, 8 does not), 24 columns with AVX2's 8 lanes: 8; 6 columns: 6
    blocked = blocked_trace(_matmul_trace([1, 1, 28, 1], [1, 3, 8, 1], [12, 1]), lanes=8)
    assert blocked is not None and _decisions(blocked)[:3] == [[4, 1, 1, 7], [1, 3, 1, 8], [12, 1]]
    blocked = blocked_trace(_matmul_trace([2, 2, 2, 1], [1, 1, 6, 1], [4, 2]), lanes=16)
    # a second-level factor that no longer divides the rest becomes 1
    assert blocked is not None and _decisions(blocked)[:3] == [[1, 1, 1, 8], [1, 1, 1, 6], [8, 1]]


def test_the_other_spatial_loops_of_a_block_keep_nothing_innermost() -> None:
    insts, decisions = _matmul_trace([1, 1, 8, 1], [1, 1, 1, 16], [16, 1])
    insts = [
        insts[0],
        ["GetLoops", ["b0"], [], ["l0", "l1", "l2", "l3"]],
        ["SamplePerfectTile", ["l0"], [4, 64], ["v20", "v21", "v22", "v23"]],
        *insts[2:],
    ]
    decisions = [[2, [1, 1, 2, 2]]] + [[index + 1, value] for index, value in decisions]
    blocked = blocked_trace([insts, decisions], lanes=16)
    assert blocked is not None  # a batch matmul: the batch loop's innermost tile 1
    assert _decisions(blocked)[:4] == [[4, 1, 1, 1], [1, 1, 1, 8], [1, 1, 1, 16], [16, 1]]


@pytest.mark.parametrize(
    "trace",
    [
        _matmul_trace([16, 1, 1, 8], [4, 1, 1, 16], [64, 1]),  # already blocked so
        [  # one spatial loop tiled in four: a reduction's rfactor, not a multi-level tiling
            [
                ["GetSBlock", [], ["C", "main"], ["b0"]],
                ["GetLoops", ["b0"], [], ["l1", "l2"]],
                ["SamplePerfectTile", ["l1"], [4, 64], ["v3", "v4", "v5", "v6"]],
                ["SamplePerfectTile", ["l2"], [2, 64], ["v7", "v8"]],
            ],
            [[2, [2, 2, 2, 2]], [3, [4, 32]]],
        ],
        [[["GetSBlock", [], ["C", "main"], ["b0"]]], []],  # no decisions at all
    ],
)
def test_a_trace_with_nothing_to_block_gives_nothing(trace: list[Any]) -> None:
    assert blocked_trace(trace, lanes=16) is None


def _tiles(trace: Any) -> list[list[int]]:
    return [
        [int(x) for x in trace.decisions[inst]]
        for inst in trace.insts
        if inst.kind.name == "SamplePerfectTile" and inst in trace.decisions
    ]


@pytest.mark.tvm
def test_a_matmuls_program_blocked_replays_and_computes_the_same() -> None:
    import tvm

    n = 64
    mod = matmul_module(n)
    blocker = RegisterBlock(mod, space_postprocs(mod), lanes=16)
    target = tvm.target.Target(X86_TARGET)
    a, b = (np.random.default_rng(s).standard_normal((n, n)).astype(np.float32) for s in (0, 1))
    # float32 sums of n products in any order: within n units of rounding of the sum of their
    # magnitudes (twice: either order's error against the exact sum)
    bound = 2 * n * 2.0**-24 * (np.abs(a) @ np.abs(b))
    rewrites = 0
    for program in random_programs(mod, 6, seed=3):
        rewrite = blocker.of(program.sch.trace)
        if rewrite is None:  # drawn already blocked so
            continue
        rewrites += 1
        _, candidate = rewrite
        tiles = _tiles(candidate.sch.trace)
        assert [t[-1] for t in tiles] == [ROWS, 16, 1] and tiles[0][2] == tiles[1][2] == 1
        again = without_postprocessing(candidate.sch.trace)  # what a later rewrite reads
        assert "EnterPostproc" not in [inst[0] for inst in again[0]]
        assert blocked_trace(again, lanes=16) is None  # blocked once is blocked
        outputs = []
        for sch in (program.sch, candidate.sch):
            out = tvm.runtime.tensor(np.zeros((n, n), np.float32))
            tvm.tirx.build(sch.mod, target)(tvm.runtime.tensor(a), tvm.runtime.tensor(b), out)
            outputs.append(out.numpy())
        assert np.all(np.abs(outputs[1] - outputs[0]) <= bound)
        assert np.all(np.abs(outputs[1] - a.astype(np.float64) @ b.astype(np.float64)) <= bound)
    assert rewrites >= 3


@pytest.mark.tvm
@pytest.mark.parametrize(
    ("target", "lanes"),
    [
        ({"kind": "llvm", "mcpu": "skylake-avx512"}, 16),
        ({"kind": "llvm", "mcpu": "znver3"}, 8),
        ({"kind": "llvm", "mcpu": "x86-64"}, 4),
        ({"kind": "cuda", "arch": "sm_90"}, None),
    ],
)
def test_the_lanes_are_the_cpu_targets_and_a_gpu_has_none(target: dict, lanes: int | None) -> None:
    import tvm

    assert vector_lanes(tvm.target.Target(target)) == lanes
