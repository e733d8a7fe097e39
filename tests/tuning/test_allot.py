"""How a round's picks are shared among a network's tasks (tcl.tuning.allot)."""

from __future__ import annotations

import math

import pytest

from tcl.tuning.allot import (
    GRADIENT_ALPHA,
    MOST_PER_TASK,
    PROGRAMS_FLOOR,
    Allotment,
    Confidence,
    check_task_scheduler,
    gradient,
    picks_needed,
    picks_of,
    quick_picks_of,
    root_shares,
)
from tcl.tuning.options import TuneOptions


def test_root_shares_average_one_and_follow_the_square_root() -> None:
    got = root_shares({"conv": 400.0, "matmul": 100.0, "reshape": 1.0, "empty": 0.0})
    assert got is not None
    assert math.isclose(sum(got.values()) / len(got), 1.0)
    assert math.isclose(got["conv"], 2 * got["matmul"])  # 4x the value, 2x the share
    assert math.isclose(got["matmul"], 10 * got["reshape"])
    assert got["empty"] == 0.0 and picks_of(2, got["empty"]) == 1
    assert root_shares({"a": 0.0, "b": 0.0}) is None
    assert root_shares({}) is None


def test_picks_keep_at_least_one_and_at_most_a_few_times_the_round() -> None:
    assert picks_of(2, 0.01) == 1
    assert picks_of(2, 1.0) == 2
    assert picks_of(2, 2.6) == 5
    assert picks_of(2, 100.0) == MOST_PER_TASK * 2
    assert picks_of(9, 0.5) == 4  # round half to even, as Python rounds


def test_a_quick_round_s_picks_keep_at_least_one_and_never_more_than_its_size() -> None:
    assert quick_picks_of(2, 0.0) == 1
    assert quick_picks_of(2, 0.7) == 1  # a light task: 1.4 rounds to 1
    assert quick_picks_of(2, 0.8) == 2
    assert quick_picks_of(2, 3.0) == 2  # a heavy task: no more than the quick round's size
    assert quick_picks_of(4, 0.5) == 2 and quick_picks_of(1, 0.01) == 1


def test_an_allotment_shares_by_work_until_every_task_is_measured_then_by_time() -> None:
    # "a" does 16x the FLOPs of "b", but once measured "b" holds 4x the time (memory-bound)
    allot = Allotment(weights={"a": 1.0, "b": 2.0}, work={"a": 16.0, "b": 1.0})
    assert math.isclose(allot.share("a"), 2 * 4 / 5) and math.isclose(allot.share("b"), 2 / 5)
    allot.measured("a", [0.002, 0.001])
    assert allot.best == {"a": 0.001} and allot.picks("a", 5) == 8  # "b" not measured yet
    allot.measured("b", [0.002])  # weight 2 x 0.002 s: 4x a's time
    assert math.isclose(allot.share("b"), 2 * 2 / 3) and math.isclose(allot.share("a"), 2 / 3)
    assert allot.picks("b", 3) == 4 and allot.picks("a", 3) == 2
    assert allot.share("unknown") == 1.0


def test_a_task_whose_programs_all_failed_keeps_the_even_share() -> None:
    allot = Allotment(weights={"a": 1.0, "b": 1.0, "c": 1.0}, work={"a": 1.0, "b": 1.0, "c": 1.0})
    allot.measured("a", [0.004])
    allot.measured("b", [0.001])
    allot.measured("c", [1e10])  # measured, nothing ran (the database's placeholder cost)
    assert allot.share("c") == 1.0
    assert math.isclose(allot.share("a"), 2 * 2 / 3) and math.isclose(allot.share("b"), 2 / 3)


def test_an_unknown_allot_is_refused_by_name() -> None:
    from tcl.tuning.allot import allotment

    with pytest.raises(ValueError, match=r"unknown allot 'flops'.*even, time"):
        allotment([], "flops")
    with pytest.raises(ValueError, match="unknown allot 'flops'"):
        TuneOptions(allot="flops")
    assert allotment([], "even") is None


def test_the_search_strategy_takes_its_task_s_picks_from_the_allotment() -> None:
    """``NewProgramsOnly.batch``: the task's picks where the run allots by time, the round's
    as given where it does not."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    allot = Allotment(weights={"w": 1.0, "v": 1.0}, work={"w": 9.0, "v": 1.0})
    strategy = NewProgramsOnly(ms.search_strategy.EvolutionarySearch(), allotment=allot)
    strategy.workload = "w"
    assert strategy.batch(2) == 3  # 2 x 2 x 3/4
    assert NewProgramsOnly(ms.search_strategy.EvolutionarySearch()).batch(5) == 5


def test_picks_needed_is_how_far_down_the_order_the_best_program_was() -> None:
    assert picks_needed([3.0, 1.0, 2.0]) == 2
    assert picks_needed([1.04, 5.0, 1.0]) == 1  # within 5% of the best counts as finding it
    assert picks_needed([1.06, 5.0, 1.0]) == 3
    assert picks_needed([1e10, 2.0, 1e10, 1.0]) == 4  # failed runs are never the best
    assert picks_needed([1.0, 2.0]) is None  # two programs say little of an order
    assert picks_needed([1e10, 1e10, math.inf]) is None
    assert picks_needed([0.0, 2.0, 1.0]) == 3  # no time at all is not a measurement


def test_confidence_keeps_twice_the_last_rounds_need_within_the_batch() -> None:
    sure = Confidence(fewest=2)
    assert sure.keep(9) == 9  # nothing measured yet
    sure.measured([1.0, 2.0])  # says nothing
    assert sure.keep(9) == 9
    sure.measured([1.0, 2.0, 3.0])
    assert sure.keep(9) == 2
    sure.measured([3.0, 2.0, 2.5, 1.0])
    assert sure.keep(9) == 8 and sure.keep(5) == 5
    sure.measured([1.0, 2.0, 3.0])
    assert sure.keep(9) == 8  # the last two rounds: 4, 1
    sure.measured([1.0, 2.0, 3.0])
    assert sure.keep(9) == 2
    with pytest.raises(ValueError, match="at least 1"):
        Confidence(fewest=0)
    with pytest.raises(ValueError, match="confident must be 0 or more"):
        TuneOptions(confident=-1)


def test_the_gradient_of_full_rounds_is_metaschedule_s() -> None:
    """Rounds of ``per_round`` programs each: MetaSchedule's gradient, weight x (alpha x the
    gain of the last 3 rounds a round + (1 - alpha) x best / rounds)."""
    best = [4.0, 3.0, 2.5, 2.0]
    got = gradient([16, 16, 16, 16], best, weight=2.0, per_round=16)
    recent = (4.0 - 2.0) / 3
    assert math.isclose(got, 2.0 * (GRADIENT_ALPHA * recent + (1 - GRADIENT_ALPHA) * 2.0 / 4))
    # fewer than 1 + 3 rounds: no recent gain yet
    assert math.isclose(gradient([16, 16], [4.0, 3.0], 1.0, 16), (1 - GRADIENT_ALPHA) * 3.0 / 2)


def test_a_quick_round_counts_as_the_fraction_of_a_round_it_measured() -> None:
    # a quick round of 2 in rounds of 16: an eighth of a round, 8x the gradient of a full one
    assert math.isclose(gradient([2], [1.0], 1.0, 16), 8 * gradient([16], [1.0], 1.0, 16))
    # the recent gain is a gain per full round's worth of programs
    quick = gradient([2, 3, 2, 2], [4.0, 3.0, 2.5, 2.0], 1.0, 16)
    recent, rounds = (4.0 - 2.0) / (7 / 16), 9 / 16
    assert math.isclose(quick, GRADIENT_ALPHA * recent + (1 - GRADIENT_ALPHA) * 2.0 / rounds)


def test_a_light_task_after_its_quick_round_comes_before_a_heavy_task_s_fifth_round() -> None:
    """BERT-tiny's softmax (weight 2, 0.033 ms after a quick round of 2) against a matmul
    (weight 2, 0.155 ms after a quick round of 2, 3 transplants and two full rounds): counted
    by rounds the matmul is first, counted by programs the softmax is."""
    softmax = ([2], [0.033])
    matmul = ([2, 3, 15, 14], [0.17, 0.165, 0.16, 0.155])
    by_rounds = [gradient([16] * len(p), b, 2.0, 16) for p, b in (softmax, matmul)]
    by_programs = [gradient(p, b, 2.0, 16) for p, b in (softmax, matmul)]
    assert by_rounds[0] < by_rounds[1]
    assert by_programs[0] > by_programs[1]


def test_a_task_with_nothing_that_ran_is_worth_a_round_at_once() -> None:
    assert gradient([], [], 1.0, 16) == math.inf
    assert gradient([2], [math.inf], 1.0, 16) == math.inf  # both programs failed
    assert gradient([0], [1.0], 1.0, 16) == math.inf  # no program measured


def test_an_unknown_task_scheduler_is_refused_by_name() -> None:
    check_task_scheduler("gradient")
    check_task_scheduler("programs")
    with pytest.raises(ValueError, match=r"unknown task scheduler 'round-robin'.*gradient"):
        check_task_scheduler("round-robin")
    with pytest.raises(ValueError, match="unknown task scheduler"):
        TuneOptions(task_scheduler="by-time")


def test_a_floor_counts_a_quick_round_as_that_many_programs() -> None:
    """``least``: a quick round of 2 counts as 4 programs, half the gradient it had; a task
    past the floor is counted as before."""
    assert math.isclose(
        gradient([2], [1.0], 1.0, 16, least=PROGRAMS_FLOOR),
        gradient([2], [1.0], 1.0, 16) * 2 / PROGRAMS_FLOOR,
    )
    assert gradient([2, 3], [2.0, 1.5], 1.0, 16, least=PROGRAMS_FLOOR) == gradient(
        [2, 3], [2.0, 1.5], 1.0, 16
    )
    check_task_scheduler("programs-floor")
