"""A time budget's deadline, shared by the search of every task and the builder.

``tcl tune --minutes M`` starts a :class:`Deadline` when the tuning starts. The search
(:class:`tcl.integrations.tvm.search.NewProgramsOnly`) hands out no round after a task's first
once it has passed; the builder (:class:`tcl.integrations.tvm.measure.PersistentLocalBuilder`)
starts no build of such a round past it (``builds_until``) and cuts any build after 20 s, and a
build of such a round soon after the deadline (``build_timeout``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Under a time budget, whatever its length, one build may take at most this long (the builder's
# own timeout, 60 s, where that is shorter). A round waits for its slowest build, and a rare
# program (unrolled by 512 steps) keeps LLVM busy for minutes; the slowest programs that the
# default's ResNet-50 runs measured built in 7 s on one core of a Zen 4, and the slow ones that
# were their task's best in 3.5 s. In a 15-minute run with NCHW16c convolutions, six batches
# (four builds cut after 60 s) held 390 of its 900 s, where no batch of five other runs took
# more than 19 s (bench/README.md, *A build cut short under a time budget* and *A
# build cut after 20 s under any budget*).
BUDGET_BUILD_TIMEOUT_S = 20.0
# A round after its task's first, whose batch stops at the deadline, cuts a build it started
# before the deadline once it runs this long past it (never sooner than this long after the
# batch started): a conformer's 1-minute run on 2 cores had ended 15 s late waiting for a build
# cut after its 20 s, where the slowest programs of the default's ResNet-50 runs built in 7 s.
LATE_BUILD_S = 8.0


@dataclass
class Deadline:
    """When a search must stop (``time.time()``; None: never), shared by every task's
    strategy and set when the tuning starts (:meth:`start`), and how long its budget is."""

    at: float | None = None
    # whether the batch just handed out is a round after its task's first (the last strategy
    # to hand one out says): such a batch stops at the deadline, a task's first round does not
    binding: bool = False
    seconds: float | None = None  # the budget's length

    def start(self, now: float, seconds: float) -> None:
        """A budget of ``seconds`` from ``now`` (``time.time()``)."""
        self.at, self.seconds = now + seconds, seconds

    def elapsed(self) -> float:
        """Seconds since the budget started (0 before, or without one)."""
        if self.at is None or self.seconds is None:
            return 0.0
        return max(0.0, time.time() - (self.at - self.seconds))

    def passed(self) -> bool:
        return self.at is not None and time.time() >= self.at

    def build_timeout(self, longest: float, now: float | None = None) -> float:
        """How long one build of the batch handed out at ``now`` (``time.time()`` where None)
        may take (s): ``longest`` (the builder's own timeout) without a budget; under one,
        :data:`BUDGET_BUILD_TIMEOUT_S` at most, and for a batch that stops at the deadline
        (``binding``) no longer than until :data:`LATE_BUILD_S` past it, at least that long."""
        if self.seconds is None:
            return longest
        timeout = min(longest, BUDGET_BUILD_TIMEOUT_S)
        if self.binding and self.at is not None:
            now = time.time() if now is None else now
            timeout = min(timeout, max(LATE_BUILD_S, self.at + LATE_BUILD_S - now))
        return timeout

    def builds_until(self) -> float | None:
        """When the builder stops starting the builds of the batch it is given (None: it
        builds them all): the deadline, for a round after its task's first."""
        return self.at if self.binding else None
