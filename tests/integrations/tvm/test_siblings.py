"""tcl.integrations.tvm.siblings: a task's best is its fastest measured program, never a failed
one, and a slower batch leaves it; a task is offered the other tasks' best programs replayed on
it, never its own nor one of other blocks, at most ``count``, the most alike first, none it
knows, replaying only as many donors as that takes, in place of a round's lowest-scored picks; a
donor is replayed once until its task finds a better program."""

from __future__ import annotations

from typing import Any

import pytest

from tcl.integrations.tvm import measure as tm

from conftest import matmul_module as _matmul
from conftest import random_programs as _programs
from conftest import space_postprocs as _postprocs

pytestmark = pytest.mark.tvm


def _results(*costs: float | None) -> list[Any]:
    """Runner results of these mean costs (s); None: a failed run."""
    from tvm.s_tir import meta_schedule as ms

    return [
        ms.runner.RunnerResult(None, "failed") if c is None else ms.runner.RunnerResult([c], None)
        for c in costs
    ]


def _replayed_key(program: Any, mod: Any) -> str:
    """The trace key of ``program`` (of another task) replayed on ``mod``."""
    from tcl.integrations.tvm.transplant import Donor, transplanted

    donor = Donor.of(program.sch.trace, mod)  # the extents only rank donors
    [graft] = transplanted(mod, _postprocs(mod), [donor])
    return tm.text_of_trace(graft.candidate.sch.trace)


def test_a_tasks_best_is_its_fastest_measured_program_never_a_failed_one() -> None:
    from tcl.integrations.tvm.siblings import RunBests
    from tcl.integrations.tvm.transplant import Donor, loop_extents

    mod = _matmul(64)
    extents = loop_extents(mod)
    programs = _programs(mod, 4)
    shared = RunBests(2)
    shared.measured("a", extents, programs[:3], _results(3e-3, 1e-3, None))
    secs, version, donor = shared.best["a"]
    assert (secs, version) == (1e-3, 1)
    assert donor.trace == Donor.of(programs[1].sch.trace, mod).trace
    assert donor.extents == extents
    shared.measured("a", extents, programs[3:], _results(2e-3))  # slower: the best stays
    shared.measured("a", extents, programs[:2], _results(None, None))  # nothing ran
    shared.measured("a", extents, programs[:1], _results(1e10))  # a failed run's cost
    assert shared.best["a"][:2] == (1e-3, 1) and shared.versions == 1
    shared.measured("a", extents, programs[3:], _results(5e-4))
    assert shared.best["a"][:2] == (5e-4, 2)
    with pytest.raises(ValueError, match="at least 1"):
        RunBests(0)


def test_a_task_is_offered_the_other_tasks_bests_the_most_alike_first() -> None:
    from tcl.integrations.tvm.siblings import RunBests, Siblings
    from tcl.integrations.tvm.transplant import loop_extents

    mod = _matmul(64)
    same, smaller, renamed, own = _matmul(64), _matmul(32), _matmul(64, name="D"), _matmul(64)
    shared = RunBests(1)
    best = {}
    for workload, donor_mod in (("same", same), ("smaller", smaller), ("renamed", renamed)):
        [best[workload]] = _programs(donor_mod, 1, seed=7)
        shared.measured(workload, loop_extents(donor_mod), [best[workload]], _results(1e-3))
    # the smaller matmul's best improves last: newest, but less alike than "same"
    [best["smaller"]] = _programs(smaller, 1, seed=8)
    shared.measured("smaller", loop_extents(smaller), [best["smaller"]], _results(1e-4))
    [own_best] = _programs(own, 1, seed=9)
    shared.measured("task", loop_extents(mod), [own_best], _results(1e-5))
    siblings = Siblings(shared, "task", mod, _postprocs(mod))
    key = {w: _replayed_key(best[w], mod) for w in ("same", "smaller")}
    assert key["same"] != key["smaller"]
    assert [k for k, _ in siblings.offers(set())] == [key["same"]]  # count 1, most alike
    assert set(siblings.replays) == {"same"}  # only as many replayed as the count takes
    shared.count = 3  # never its own best nor one of another block
    offered = siblings.offers(set())
    assert [k for k, _ in offered] == [key["same"], key["smaller"]]
    assert tm.text_of_trace(offered[0][1].sch.trace) == key["same"]
    assert [k for k, _ in siblings.offers({key["same"]})] == [key["smaller"]]  # none it knows
    assert "renamed" not in siblings.replays  # another block's program is never replayed
    # a round's picks make room for the offers: the lowest-scored go, the random ones stay
    picks = [("p0", 0), ("p1", 1), ("p2", 2), ("r0", 3)]  # best-scored first, one random last
    kept, shared_in = siblings.into(picks, set(), explore=1)
    assert [k for k, _ in shared_in] == [key["same"], key["smaller"]]
    assert kept == [("p0", 0), ("r0", 3)]
    kept, _ = siblings.into(picks[:2], set(), explore=1)  # one of the search's own stays
    assert kept == picks[:2]
    assert siblings.into(picks, {key["same"], key["smaller"]}, explore=1) == (picks, [])


def test_a_donor_is_replayed_once_until_its_task_finds_a_better_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tcl.integrations.tvm import siblings as sib
    from tcl.integrations.tvm.transplant import loop_extents

    mod, donor_mod = _matmul(64), _matmul(32)
    replays: list[int] = []
    real = sib.transplanted

    def counted(*args: Any, **kwargs: Any) -> Any:
        replays.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sib, "transplanted", counted)
    shared = sib.RunBests(2)
    programs = _programs(donor_mod, 2, seed=3)
    shared.measured("donor", loop_extents(donor_mod), programs[:1], _results(2e-3))
    siblings = sib.Siblings(shared, "task", mod, _postprocs(mod))
    first = siblings.offers(set())
    assert len(first) == 1 and len(replays) == 1
    assert siblings.offers(set()) == first and len(replays) == 1  # held, not replayed again
    shared.measured("donor", loop_extents(donor_mod), programs[1:], _results(1e-3))
    again = siblings.offers(set())
    assert len(replays) == 2 and siblings.replays["donor"][0] == 2
    assert [k for k, _ in again] == [_replayed_key(programs[1], mod)]
