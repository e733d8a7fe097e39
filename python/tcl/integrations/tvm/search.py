"""A MetaSchedule search strategy that measures only programs its database does not hold.

MetaSchedule's evolutionary search remembers the programs it picked in this run, and starts a
resumed run from the database's best ones, but it does not check the whole database: in a small
design space a resumed run draws programs of the earlier run again and spends trials measuring
them twice. ``NewProgramsOnly`` wraps the evolutionary search and hands out only candidates
whose trace the database does not hold for the task; a trial is then always a new program, and
``--trials`` adds that many new programs to a work directory.
"""

from __future__ import annotations

from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.search_strategy import PySearchStrategy

from tcl.integrations.tvm.measure import to_py
from tcl.integrations.tvm.measure import trace_key as key_of


def trace_key(trace: Any) -> str:
    """A program's identity within its task (``measure.trace_key``) from its TVM ``Trace``."""
    return key_of(to_py(trace.as_json()))


@derived_object
class NewProgramsOnly(PySearchStrategy):
    """``inner`` (a native search strategy), less the programs already in the database.
    ``attempts``: batches of only known programs drawn in a row before the task is given up as
    exhausted (each draw still avoids every program drawn before it in this run)."""

    def __init__(self, inner: Any, attempts: int = 4) -> None:
        self.inner, self.attempts = inner, attempts
        self.known: set[str] = set()
        self.workload = ""
        self.skipped = 0

    def _initialize_with_tune_context(self, context: Any) -> None:
        from tvm.s_tir.meta_schedule.database import Workload

        self.workload = str(Workload(context.mod).as_json()[0])
        self.inner._initialize_with_tune_context(context)

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Any],
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        if database is not None:
            self.known = {
                trace_key(record.trace)
                for record in database.get_all_tuning_records()
                if str(record.workload.as_json()[0]) == self.workload
            }
        self.inner.pre_tuning(max_trials, num_trials_per_iter, design_spaces, database, cost_model)

    def post_tuning(self) -> None:
        self.inner.post_tuning()

    def generate_measure_candidates(self) -> list[Any] | None:
        for _ in range(self.attempts):
            candidates = self.inner.generate_measure_candidates()
            if candidates is None:
                return None
            fresh = []
            for candidate in candidates:
                key = trace_key(candidate.sch.trace)
                if key not in self.known:
                    self.known.add(key)
                    fresh.append(candidate)
            self.skipped += len(candidates) - len(fresh)
            if fresh:
                return fresh
        return None

    def notify_runner_results(self, measure_candidates: list[Any], results: list[Any]) -> None:
        self.inner.notify_runner_results(measure_candidates, results)

    def clone(self) -> Any:
        return NewProgramsOnly(self.inner.clone(), self.attempts)
