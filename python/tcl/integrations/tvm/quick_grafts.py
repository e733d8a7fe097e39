"""The programs a task's first rounds measure without its search: transplants, and the best
program its quick round passed over.

Some of a quick round's K picks (``tcl tune --first-round K``) can be other tasks' best programs
replayed on the task (``tcl tune --transplants N``,
:class:`tcl.integrations.tvm.transplant.Transplants`): where a donor of the same blocks and
loops exists, its program is a far better first pick than a random one; where all K are
(``--transplants K``) and the task has K, the quick round runs no search at all. The task's next
transplants can follow in a round of their own (``tcl tune --transplant-round M``), before its
first full round: M programs to build and run, and no search. MetaSchedule's task scheduler
gives the rounds after the quick one to the tasks that hold the network's time first, so the
heaviest tasks measure theirs first. That round can be shared by the time each task holds after
its quick round (``tcl tune --transplant-allot time``, ``Transplants.shares``), grown only with
transplants that keep every tile decision (``time-exact``); the programs it measured are kept
apart for the cost model's hand-off (``Transplants.apart``), which no model ranked. Where the
quick round's picks are bound by their unroll step (``tcl tune --first-round-unroll N``), the
round of transplants leads with the best-scored program the bound passed over, and is then held
even without transplants. With ``tcl tune --register-block`` it leads with the best program of
the quick round rewritten to keep a block of its output in vector registers
(:mod:`tcl.integrations.tvm.register_block`), where that is a new program.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tcl.integrations.tvm.measure import measured_programs, text_of_trace


class QuickGrafts:
    """One task's programs of its first rounds that no search picked (module docstring), for
    :class:`tcl.integrations.tvm.search.NewProgramsOnly`: ``quick``, the quick round's
    transplants (trace key, ``transplant.Transplant``) until it hands them out; ``spares``, those
    of the round of transplants after it; ``passed_over``, the program (trace key, measure
    candidate) the quick round's unroll bound passed over, which leads that round; ``blocked``,
    the register-blocked rewrite of the quick round's best program, which follows it.
    ``transplants``: the run's :class:`tcl.integrations.tvm.transplant.Transplants`, or None;
    ``blocker``: the task's :class:`tcl.integrations.tvm.register_block.RegisterBlock` where
    the run rewrites (set before each search of the task), or None."""

    def __init__(self, transplants: Any = None) -> None:
        self.transplants = transplants
        self.blocker: Any = None
        self.quick: list[tuple[str, Any]] = []
        self.spares: list[tuple[str, Any]] = []
        self.passed_over: list[tuple[str, Any]] = []
        self.blocked: list[tuple[str, Any]] = []

    def prepare(
        self,
        context: Any,
        cost_model: Any,
        known: set[str],
        batch: int,
        first_trials: int,
        fits: Callable[[Any], bool],
    ) -> None:
        """Find the task's transplants (``context``'s; ranked by ``cost_model`` where
        given), none of them ``known``: a quick round of ``batch`` programs measures the first
        that ``fits`` it, up to the run's count, and one of its search's picks stays unless that
        count is ``first_trials``; the round after it measures the next ones."""
        found = self.transplants.ranked(context, cost_model)
        keyed = [(text_of_trace(t.candidate.sch.trace), t) for t in found]
        keyed = [(key, t) for key, t in keyed if key not in known]
        room = batch if self.transplants.count >= first_trials else batch - 1
        count = min(self.transplants.count, room)
        self.quick = [k for k in keyed if fits(k[1].candidate)][:count]
        taken = {key for key, _ in self.quick}
        rest = [(key, t) for key, t in keyed if key not in taken]
        self.spares = rest[: self.transplants.most_later]

    def clear(self) -> None:
        """No grafts: the task's first rounds are past, or it has no transplants."""
        self.quick, self.spares, self.passed_over, self.blocked = [], [], [], []

    def take_quick(self) -> list[tuple[str, Any]]:
        """The quick round's transplants, as (trace key, measure candidate), once."""
        quick, self.quick = self.quick, []
        return [(key, t.candidate) for key, t in quick]

    @property
    def round_due(self) -> bool:
        """Whether the round of transplants is still to come."""
        return bool(self.spares or self.passed_over or self.blocked)

    def round_of_transplants(self, known: set[str], workload: str) -> list[tuple[str, Any]]:
        """The round of transplants' programs (trace key, measure candidate), once: the
        program the quick round passed over and the register-blocked rewrite of its best, then
        as many of the spares not ``known`` as the task's share of the round asks
        (``Transplants.later_of``: those that keep every tile decision of their donor first)."""
        spares, self.spares = self.spares, []
        new = [(key, t) for key, t in spares if key not in known]
        exact = sum(t.kept >= 1.0 for _, t in new)
        wanted = self.transplants.later_of(workload, exact) if new else 0
        first = {key: c for key, c in self.passed_over + self.blocked if key not in known}
        self.passed_over, self.blocked = [], []
        later = [(key, t.candidate) for key, t in new[:wanted] if key not in first]
        return [*first.items(), *later]

    def block_best(self, candidates: list[Any], results: list[Any], known: set[str]) -> None:
        """After the quick round measured ``candidates`` (``results``, MetaSchedule's runner
        results): its best program's register-blocked rewrite for the next round, where the
        run rewrites and that is a program not ``known``."""
        from tcl.integrations.tvm.search import mean_secs  # search imports this module

        if self.blocker is None:
            return
        ran = [
            (mean_secs(r.run_secs), c)
            for c, r in zip(candidates, results, strict=True)
            if r.run_secs and not r.error_msg
        ]
        if not ran:
            return
        rewrite = self.blocker.of(min(ran, key=lambda pair: pair[0])[1].sch.trace)
        self.blocked = [rewrite] if rewrite is not None and rewrite[0] not in known else []

    def measured_apart(self, task: str, results: list[Any]) -> None:
        """Count the round of transplants' programs that ran apart from the ones a model
        ranked (``Transplants.apart``), where the run has transplants."""
        if self.transplants is not None:
            ran = self.transplants.apart.get(task, 0) + measured_programs(results)
            self.transplants.apart[task] = ran


class RoundsDue:
    """Which tasks of a run still have their round of transplants to come, by workload key:
    each task's :class:`QuickGrafts`, told by its search strategy, for a task scheduler that
    gives those rounds before any task's full round (``tcl tune --task-scheduler
    transplants-first`` or ``per-second``,
    :class:`tcl.integrations.tvm.scheduler.ProgramsGradient`)."""

    def __init__(self) -> None:
        self.grafts: dict[str, QuickGrafts] = {}

    def track(self, workload: str, grafts: QuickGrafts) -> None:
        """Follow the task ``workload``'s grafts (its strategy's, once it has a context)."""
        self.grafts[workload] = grafts

    def due(self, workload: str) -> bool:
        """Whether the task ``workload`` has its round of transplants still to come."""
        grafts = self.grafts.get(workload)
        return grafts is not None and grafts.round_due


__all__ = ["QuickGrafts", "RoundsDue"]
