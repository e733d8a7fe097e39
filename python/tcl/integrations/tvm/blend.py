"""A pre-trained cost model that keeps learning during a run: tcl's frozen model blended with a
model fitted on the run's own measurements (MetaSchedule's XGB), task by task.

The packaged model ranks a new network's programs well from the first round, but it is frozen:
it never sees what this run measured, where MetaSchedule's XGB, which starts from nothing,
learns from every measurement and catches up as the budget grows. The blend scores a task's
candidates by both, each turned into ranks within the batch (scale-free: the two models'
scores mean different things), weighted by how much the run has measured of that task: with
``n`` of its programs measured, the learner's weight is ``n / (n + half_at)``. A task nothing
was measured of is ranked by the pre-trained model alone, and so is every task while the
learner has not been fitted yet.

A hand-off (``handoff_at``) is the blend's limit of a step: the pre-trained model alone ranks a
task until ``handoff_at`` of its programs are measured, the learner alone from then on, each
with its own scores (MetaSchedule's evolutionary search draws parents in proportion to them, so
after the hand-off the search is the learner's as it would be on its own). The pre-trained
model picks a task's first round, where it leads; the learner, fitted on every task's
measurements, picks the rounds after, where it catches up. Programs that no model ranked (a
task's round of other tasks' best programs, :class:`tcl.integrations.tvm.transplant.Transplants`'s
``apart``) are ``uncounted``: the hand-off waits for as many of the task's own.

A first model (``first``, ``first_until``) stands in for the pre-trained one while a task has
fewer than ``first_until`` programs measured: a quick first round ranks programs drawn at random
from the design space, the kind a model trained on random programs ranks best, and the rounds
after rank the search's candidates, which a model trained on search-drawn programs ranks better.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tcl.integrations.tvm.measure import measured_programs, task_of
from tcl.integrations.tvm.patches import enters_tvm
from tcl.integrations.tvm.score_cache import ScoreCache
from tcl.training.metrics import ranks
from tcl.tuning.options import HANDOFF_AT as HANDOFF_AT

# Programs of a task the run must have measured for its own model to weigh as much as the
# pre-trained one.
HALF_AT = 32


def learner_weight(measured: int, half_at: int = HALF_AT) -> float:
    return measured / (measured + half_at) if measured > 0 else 0.0


@derived_object
class Blend(PyCostModel):
    """``prior`` (a pre-trained cost model) blended per task with ``learner`` (a cost model
    that learns from ``update``), larger is better; ``handoff_at``: a hand-off instead of a
    blend; ``uncounted``: programs of each task (by ``measure.task_of``) its hand-off does not
    count, filled in during the run (module docstring)."""

    @enters_tvm
    def __init__(
        self,
        prior: Any,
        learner: Any,
        half_at: int = HALF_AT,
        handoff_at: int | None = None,
        first: Any = None,
        first_until: int = 0,
        uncounted: dict[str, int] | None = None,
    ) -> None:
        super().__init__()
        self.prior, self.learner, self.half_at = prior, learner, half_at
        self.handoff_at = handoff_at
        self.first, self.first_until = first, first_until if first is not None else 0
        self.measured: dict[str, int] = {}
        self.uncounted = uncounted if uncounted is not None else {}
        # the learner's scores by program, until it next learns: a round's generations score
        # many of the same programs (tcl's own model keeps its scores itself)
        self.learned = ScoreCache()

    def _ready(self) -> bool:
        """Whether the learner has been fitted (MetaSchedule's XGB answers at random before)."""
        return getattr(self.learner, "booster", True) is not None

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        task = task_of(context)
        measured = self.measured.get(task, 0) - self.uncounted.get(task, 0)
        if self.handoff_at is not None:
            if bool(candidates) and measured >= self.handoff_at and self._ready():
                return self._learned(context, candidates)
            return self._prior(context, candidates, measured)
        prior = self._prior(context, candidates, measured)
        weight = learner_weight(measured, self.half_at)
        if not candidates or weight == 0.0 or not self._ready():
            return prior
        learned = self._learned(context, candidates)
        return (1.0 - weight) * ranks(prior) + weight * ranks(learned)

    def _prior(self, context: Any, candidates: list[Any], measured: int) -> np.ndarray:
        """The pre-trained scores: the first model's while the task is in its first round."""
        model = self.first if measured < self.first_until else self.prior
        return np.asarray(model.predict(context, candidates), dtype=np.float64)

    def _learned(self, context: Any, candidates: list[Any]) -> np.ndarray:
        """The (fitted) learner's scores of ``candidates``, kept ones as kept."""
        return self.learned.scores(
            context, candidates, lambda cs: np.asarray(self.learner.predict(context, cs))
        )

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.prior.update(context, candidates, results)
        if self.first is not None:
            self.first.update(context, candidates, results)
        self.learner.update(context, candidates, results)
        self.learned.forget()  # refitted: every task's scores have changed
        task = task_of(context)  # a structural hash of the task's module: computed once
        self.measured[task] = self.measured.get(task, 0) + measured_programs(results)

    def load(self, path: str) -> None:
        raise NotImplementedError("a blended cost model is made for a run, not loaded")

    def save(self, path: str) -> None:
        raise NotImplementedError("a blended cost model is made for a run, not saved")
