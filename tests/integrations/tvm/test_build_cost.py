"""tcl.integrations.tvm.build_cost: a program's unroll step is the one its search sampled, read
off its postprocessed trace, live or read back from a database's JSON; bound scores keep their
order above zero and put every program left out below the others, whose best-scored ones the
bound model keeps for the round after."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from conftest import matmul_module

pytestmark = pytest.mark.tvm

UNROLL_STEPS = [0, 16, 64, 512]  # MetaSchedule's ParallelizeVectorizeUnroll on a CPU


def _sampled_unroll(trace: Any) -> int:
    """The unroll step the search drew for ``trace``: its decision on the unroll steps."""
    for inst in trace.insts:
        if inst.kind.name == "SampleCategorical":
            steps = [int(step) for step in inst.attrs[0]]
            if steps == UNROLL_STEPS:
                return steps[int(trace.decisions[inst])]
    raise AssertionError("no unroll step was drawn")


def _matmul_programs(count: int, seed: int) -> tuple[Any, Any, list[Any]]:
    """A 16x16 matmul, an x86-64 target and ``count`` random programs of the matmul."""
    import tvm

    from tcl.integrations.tvm import measure as tm

    mod = matmul_module(16)
    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    return mod, target, tm.random_candidates(mod, target, count, seed=seed)


def test_a_programs_unroll_step_is_the_one_its_search_drew() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.build_cost import unroll_step, within_unroll

    mod, target, programs = _matmul_programs(32, seed=1)
    steps = [unroll_step(p.sch.trace) for p in programs]
    assert steps == [_sampled_unroll(p.sch.trace) for p in programs]
    assert {0, 512} <= set(steps)  # the draws cover the ends of the range
    assert [within_unroll(p, 64) for p in programs] == [s <= 64 for s in steps]
    # A database's record, read back from its JSON, holds the step as a plain number.
    database = ms.database.MemoryDatabase()
    workload = database.commit_workload(mod)
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    for program, step in zip(programs, steps, strict=True):
        record = ms.database.TuningRecord(program.sch.trace, workload, [1e-3], target, args)
        back = ms.database.TuningRecord.from_json(record.as_json(), workload)
        assert unroll_step(back.trace) == step


def test_bound_scores_keep_their_order_above_zero_and_the_rest_below() -> None:
    from tcl.integrations.tvm.build_cost import scores_within_unroll

    scores = np.array([2.0, -1.0, 0.5, -3.0, 4.0, 0.0, -0.5])
    kept = np.array([True, True, True, True, False, True, False])
    out = scores_within_unroll(scores, list(kept))
    assert (out[~kept] == 0.0).all()
    assert (out[kept] > 0.0).all()  # MetaSchedule reads a score at or below zero as zero
    assert list(np.argsort(-out[kept])) == list(np.argsort(-scores[kept]))
    assert np.array_equal(out[[0, 2]], scores[[0, 2]])  # a score above zero is as it was
    assert np.array_equal(scores_within_unroll(scores, [True] * 7)[[0, 2, 4]], scores[[0, 2, 4]])


def test_the_bound_model_keeps_the_best_scored_programs_it_passed_over() -> None:
    """Across its calls, ``WithinUnroll.passed_over`` holds the best-scored programs past the
    bound it was shown, best first, each once and at most ``PASSED_OVER_KEPT`` of them."""
    import zlib

    from tcl.integrations.tvm.build_cost import PASSED_OVER_KEPT, WithinUnroll, unroll_step
    from tcl.integrations.tvm.measure import replay_context, text_of_trace

    from conftest import scored_by_candidate

    mod, target, programs = _matmul_programs(48, seed=2)
    context = replay_context(mod, target)
    keys = [text_of_trace(p.sch.trace) for p in programs]
    inner_score = {k: zlib.crc32(k.encode()) / 2**31 - 1.0 for k in keys}  # some below zero
    model = WithinUnroll(scored_by_candidate(lambda c: inner_score[text_of_trace(c.sch.trace)]), 16)
    for start in range(0, 48, 16):  # three calls, as a search's generations would make
        model.predict(context, programs[start : start + 16])
    model.predict(context, programs[:8])  # a program scored again is kept once
    past = {k for k, p in zip(keys, programs, strict=True) if unroll_step(p.sch.trace) > 16}
    assert len(past) > PASSED_OVER_KEPT  # there were more to keep than it keeps
    best = sorted(past, key=lambda k: -inner_score[k])[:PASSED_OVER_KEPT]
    assert [key for key, _ in model.passed_over] == best
    assert all(text_of_trace(c.sch.trace) == key for key, c in model.passed_over)
