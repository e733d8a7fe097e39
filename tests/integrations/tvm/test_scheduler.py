"""The task scheduler that counts a task's rounds by their programs
(tcl.integrations.tvm.scheduler)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from conftest import matmul_module


def test_every_task_has_a_round_then_the_one_worth_most_and_the_records_agree(
    tmp_path: Path,
) -> None:
    """A real search of two matmuls, the 32 x 32 one weighted 8: each has its first round in
    the opening pass, then the heavy one every round (its gradient is 8 x its best time, 8x
    the light one's work, over its rounds); what the scheduler noted of each joined batch
    agrees with the database."""
    from tcl.integrations.tvm.measure import entry_key, workload_key
    from tcl.integrations.tvm.scheduler import ProgramsGradient, best_ms

    scheduler = ProgramsGradient(4)
    contexts, database = _two_matmuls(tmp_path, scheduler)
    light, heavy = scheduler.programs
    assert light == [4]  # its first round, and none after
    assert heavy[0] == 4 and len(heavy) == 3  # the last of its 4 batches is joined at the end
    records = database.get_all_tuning_records()
    for context, best in zip(contexts, scheduler.best_ms, strict=True):
        costs = [
            1e3 * sum(float(x) for x in r.run_secs) / len(r.run_secs)
            for r in records
            if entry_key(r.workload) == workload_key(context.mod)
        ]
        assert best == sorted(best, reverse=True)  # a best time only falls
        assert math.isclose(best_ms(database, context.mod), min(costs))
    assert len(records) == 20


def test_a_task_whose_round_of_transplants_is_due_comes_before_the_heavier_one(
    tmp_path: Path,
) -> None:
    """The same search under ``transplants-first``'s scheduler, the light task's round of
    transplants due throughout: after the opening pass the light task has every round; each
    batch counts as a round whatever it measured (a round of 8 noted for each batch of 4)."""
    from tcl.integrations.tvm.scheduler import ProgramsGradient

    scheduler = ProgramsGradient(8, by_batches=True, due=_due_throughout(16))
    _two_matmuls(tmp_path, scheduler)
    light, heavy = scheduler.programs
    assert heavy == [8]  # its first round, and none after
    assert light[:3] == [8, 8, 8]  # the last of its 4 batches may be joined at the end


def test_per_second_gives_the_rounds_to_the_task_whose_programs_cost_less(
    tmp_path: Path,
) -> None:
    """``per-second``'s scheduler divides each task's gradient by the seconds a program of it
    has taken: with one program of the heavy task noted as 10,000 s before the search (its
    gradient is about 64x the light one's; its seconds a program then about 2,000, the light
    one's under a few), the light task has every round after the opening pass, where the plain
    gradient gives them all to the heavy one (the first test). The turns it timed agree with the
    database."""
    from tcl.integrations.tvm.measure import entry_key, workload_key
    from tcl.integrations.tvm.scheduler import ProgramsGradient

    scheduler = ProgramsGradient(4, least=4, per_second=True)
    scheduler.turns[1] = (10_000.0, 1)
    contexts, database = _two_matmuls(tmp_path, scheduler)
    light, heavy = scheduler.programs
    assert heavy == [4] and light[:3] == [4, 4, 4]
    records = database.get_all_tuning_records()
    for task_id, context in enumerate(contexts):  # the heavy one's noted 1 program before
        seconds, programs = scheduler.turns[task_id]
        joined = sum(scheduler.programs[task_id])
        assert programs == joined + task_id and seconds > 10_000.0 * task_id
        measured = sum(entry_key(r.workload) == workload_key(context.mod) for r in records)
        assert measured in (joined, joined + 4)  # its last batch may be joined at the end


def test_per_second_gives_the_rounds_of_transplants_heaviest_first(tmp_path: Path) -> None:
    """The same, both tasks' rounds of transplants due throughout: while any is due the
    seconds a program are left out, so the heavy task has every round after the opening pass
    (its gradient about 64x the light one's) though its programs are noted as the costlier."""
    from tcl.integrations.tvm.scheduler import ProgramsGradient

    scheduler = ProgramsGradient(4, least=4, due=_due_throughout(16, 32), per_second=True)
    scheduler.turns[1] = (10_000.0, 1)
    _two_matmuls(tmp_path, scheduler)
    light, heavy = scheduler.programs
    assert light == [4] and heavy[:3] == [4, 4, 4]


def _due_throughout(*sizes: int) -> Any:
    """A ``RoundsDue`` in which the n x n matmul of each of ``sizes`` has its round of
    transplants due to the end (its passed-over program is never handed out here)."""
    from tcl.integrations.tvm.measure import workload_key
    from tcl.integrations.tvm.quick_grafts import QuickGrafts, RoundsDue

    due = RoundsDue()
    for n in sizes:
        grafts = QuickGrafts()
        grafts.passed_over = [("a program", None)]
        due.track(workload_key(matmul_module(n)), grafts)
    return due


def _two_matmuls(tmp_path: Path, scheduler: Any) -> tuple[list[Any], Any]:
    """(Tune contexts, database) of a real search of two matmuls, 16 x 16 weighted 1 and
    32 x 32 weighted 8, 20 programs in rounds of 4, each task scheduled by ``scheduler``."""
    import tvm
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
    contexts = [
        ms.TuneContext(
            mod=matmul_module(n),
            target=target,
            space_generator="post-order-apply",
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=16, init_min_unmeasured=16, genetic_num_iters=1
            ),
            task_name=f"matmul{n}",
            num_threads=1,
        )
        for n in (16, 32)
    ]
    builder = tm.PersistentLocalBuilder(max_workers=1)
    evaluator = tm.EvaluatorConfig(number=1, repeat=1, min_repeat_ms=0)
    runner = tm.make_runner(evaluator, 30.0, rpc=None, threads=1)
    try:
        database = ms.tune_tasks(
            tasks=contexts,
            task_weights=[1.0, 8.0],
            work_dir=str(tmp_path),
            max_trials_global=20,
            num_trials_per_iter=4,
            task_scheduler=scheduler,
            builder=builder,
            runner=runner,
            cost_model=ms.cost_model.RandomModel(),
        )
    finally:
        tm.shutdown(builder, runner)
    return contexts, database


def test_the_scheduler_s_name_is_checked() -> None:
    from tcl.integrations.tvm.quick_grafts import RoundsDue
    from tcl.integrations.tvm.scheduler import ProgramsGradient, task_scheduler
    from tcl.tuning.allot import PROGRAMS_FLOOR

    assert task_scheduler("gradient", 8) == "gradient"
    assert task_scheduler("programs", 8).least == 0
    assert task_scheduler("programs-floor", 8).least == PROGRAMS_FLOOR
    first = task_scheduler("transplants-first", 8, due := RoundsDue())
    assert first.by_batches and first.due is due and first.least == 0
    assert not first.per_second
    second = task_scheduler("per-second", 8, due)
    assert second.per_second and second.due is due and second.least == PROGRAMS_FLOOR
    assert not second.by_batches
    with pytest.raises(ValueError, match="unknown task scheduler 'even'"):
        task_scheduler("even", 8)
    with pytest.raises(ValueError, match="at least 1 program"):
        ProgramsGradient(0)
