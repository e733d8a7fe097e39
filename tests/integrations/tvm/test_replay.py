"""tcl.integrations.tvm.replay: a random program's trace replayed on its task with the task's
postprocessors makes the same program, and the same measure candidate; a trace of other blocks,
or a program a postprocessor rejects, makes none."""

from __future__ import annotations

from typing import Any

import pytest

from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.replay import measure_candidate, postprocessed, replayed

from conftest import matmul_module as _matmul

pytestmark = pytest.mark.tvm

TARGET = {"kind": "llvm", "mcpu": "x86-64", "num-cores": 1}


def _task(mod: Any, programs: int) -> tuple[list[Any], list[Any]]:
    """The task's postprocessors for TARGET and ``programs`` random programs of it (each
    postprocessed by MetaSchedule's search)."""
    import tvm

    from tcl.integrations.tvm.patches import patch_inspect_stack

    patch_inspect_stack()  # a tune context imports TVM's tensor intrinsics: slow without it
    target = tvm.target.Target(TARGET)
    context = tm.replay_context(mod, target)
    context.generate_design_space()
    return list(context.space_generator.postprocs), tm.random_candidates(mod, target, programs, 3)


class _Rejects:
    """A postprocessor that turns every program down."""

    def apply(self, sch: Any) -> bool:
        return False


def test_a_trace_replayed_with_its_tasks_postprocessors_is_the_same_program() -> None:
    import tvm

    mod = _matmul(64)
    postprocs, programs = _task(mod, 4)
    assert programs
    for program in programs:
        sch = replayed(mod, program.sch.trace, postprocs)
        assert sch is not None
        tvm.ir.assert_structural_equal(sch.mod, program.sch.mod)
        candidate = measure_candidate(sch)
        assert [str(a.as_json()) for a in candidate.args_info] == [
            str(a.as_json()) for a in program.args_info
        ]


def test_a_trace_of_other_blocks_or_a_rejected_program_makes_none() -> None:
    from tvm.s_tir import Schedule

    mod = _matmul(64)
    postprocs, [program] = _task(mod, 1)
    assert replayed(_matmul(64, name="D"), program.sch.trace, postprocs) is None
    assert replayed(mod, program.sch.trace, [*postprocs, _Rejects()]) is None
    sch = Schedule(mod)
    program.sch.trace.apply_to_schedule(sch, remove_postproc=True)
    assert not postprocessed(sch, [_Rejects()])
