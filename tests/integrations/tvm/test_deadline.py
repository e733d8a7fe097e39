"""A time budget's deadline: when it passes, and how long one build may take under it."""

from __future__ import annotations

import time

from tcl.integrations.tvm.deadline import Deadline


def test_a_budget_starts_now_and_passes_at_its_end() -> None:
    budget = Deadline()
    assert not budget.passed() and budget.builds_until() is None  # no budget: never
    budget.start(time.time(), 3600.0)
    assert budget.seconds == 3600.0 and not budget.passed()
    assert budget.builds_until() is None  # a task's first round is built whatever the time
    budget.binding = True
    assert budget.builds_until() == budget.at
    budget.start(time.time() - 10.0, 5.0)
    assert budget.passed()


def test_under_any_budget_a_build_may_take_20_s_within_the_builders_timeout() -> None:
    def under(minutes: float, longest: float = 60.0) -> float:
        budget = Deadline()
        budget.start(0.0, 60.0 * minutes)
        return budget.build_timeout(longest)

    assert Deadline().build_timeout(60.0) == 60.0  # no budget: the builder's own
    assert under(1) == under(4) == under(15) == under(600) == 20.0
    assert under(15, longest=5.0) == 5.0  # never above the builder's own


def test_a_round_that_stops_at_the_deadline_cuts_its_builds_soon_after_it() -> None:
    from tcl.integrations.tvm.deadline import LATE_BUILD_S

    budget = Deadline()
    budget.start(0.0, 60.0)  # a 1-minute budget: builds cut after 20 s
    assert budget.build_timeout(60.0, now=51.0) == 20.0  # a first round's batch: not binding
    budget.binding = True
    assert budget.build_timeout(60.0, now=10.0) == 20.0  # far from the deadline: the 20 s
    assert budget.build_timeout(60.0, now=51.0) == 60.0 + LATE_BUILD_S - 51.0
    assert budget.build_timeout(60.0, now=60.0) == LATE_BUILD_S  # never shorter than that
    assert budget.build_timeout(60.0, now=70.0) == LATE_BUILD_S
    assert Deadline(binding=True).build_timeout(60.0, now=0.0) == 60.0  # no budget


def test_a_budget_counts_its_seconds_from_its_start() -> None:
    budget = Deadline()
    assert budget.elapsed() == 0.0  # no budget
    budget.start(time.time() - 10.0, 60.0)
    assert 10.0 <= budget.elapsed() < 20.0
    budget.start(time.time() + 5.0, 60.0)  # not yet started
    assert budget.elapsed() == 0.0
