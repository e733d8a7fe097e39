"""MetaSchedule's gradient task scheduler with a task's rounds counted by the programs it measured,
or with every task's round of transplants first.

MetaSchedule's gradient task scheduler (Ansor's, section 6) gives the next round to the task
whose round is expected to take most off the network's time: after a pass that gives every task
a round in turn, its weight x (alpha x the gain of its last rounds a round + (1 - alpha) x its
best time / the rounds it has had). It counts rounds, whatever each measured. A time budget of
``tcl tune`` starts with a quick round of two programs a task and a round of three transplants,
and each counts as a whole round: after them a light task whose quick picks were poor waits
behind several full rounds of the heaviest tasks, and a one-minute budget can end before it
has a second look (BERT-tiny's softmax, after two programs 1.7x slower than its best).

:class:`ProgramsGradient` (``tcl tune --task-scheduler programs``) computes the same gradient
with a task's rounds counted by the programs it measured over a full round's
(:func:`tcl.tuning.allot.gradient`). ``--task-scheduler programs-floor`` counts a task's
programs as at least :data:`tcl.tuning.allot.PROGRAMS_FLOOR`: in tcl's runs a task's next batch
took off about as much a program as 1 / the programs it had measured predicts, but for a quick
round of two, after which it took off about half that. It reads each task's best time from the
database once the task's batch is joined (the measure callbacks have added the batch by then),
and the size of each batch from the task's record while it is out.

``--task-scheduler transplants-first`` is MetaSchedule's gradient with its rounds counted as
rounds, but every task's round of transplants (the quick round's passed-over program, its
register-blocked best, its next transplants: two to four programs and no search) comes before
any task's full round, the tasks that hold most of the network's time first. In 3-minute
ResNet-50 and MobileNet-V2 runs of the time-budget default under MetaSchedule's gradient, a
second of those rounds took 4.6x as much off its task's best time as a second of the task's
first full round, yet a quarter of them never came, and BERT-tiny's softmax had its after 41 s
of a minute (bench/README.md, *Every task's round of transplants first*).

``--task-scheduler per-second`` gives every task its round of transplants first as well, the
heaviest first, then weighs ``programs-floor``'s gradient by what the task's programs cost: the
expected gain of its next round over the seconds a program of it has taken so far (its turns
from hand-out to join: the search, the builds and the runs). A gradient is a gain per round;
what a time budget buys is gain per second, and a task's programs cost from a fraction of a
second (a softmax) to the 20-s build limit (a stem convolution unrolled by 512). Its rounds of
transplants are not weighed so: what a task has cost by then is mostly its quick round's
search, which they skip, and weighed so they put two of ResNet-50's six heaviest tasks
eleventh and twelfth (bench/README.md, *Rounds weighed by what a task's programs cost*). It is
the time-budget default (:data:`tcl.tuning.options.TIMED_TASK_SCHEDULER`).
"""

from __future__ import annotations

import math
import time
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.task_scheduler import PyTaskScheduler

from tcl.integrations.tvm.measure import workload_key
from tcl.integrations.tvm.quick_grafts import RoundsDue
from tcl.integrations.tvm.search import mean_secs
from tcl.tuning.allot import (
    FAILED_COST,
    GRADIENT_ALPHA,
    GRADIENT_WINDOW,
    PROGRAMS_FLOOR,
    check_task_scheduler,
    gradient,
)


@derived_object
class ProgramsGradient(PyTaskScheduler):
    """MetaSchedule's gradient task scheduler with a task's rounds counted by the programs it
    measured (module docstring); rounds of ``per_round`` programs (``tune_tasks``'
    ``num_trials_per_iter``), a task's programs counted as at least ``least``.
    ``programs[i]`` and ``best_ms[i]``: task ``i``'s joined batches' sizes and its best time
    (ms) after each."""

    def __init__(
        self,
        per_round: int,
        alpha: float = GRADIENT_ALPHA,
        window: int = GRADIENT_WINDOW,
        least: int = 0,
        by_batches: bool = False,
        due: RoundsDue | None = None,
        per_second: bool = False,
    ) -> None:
        super().__init__()
        if per_round < 1:
            raise ValueError(f"a round measures at least 1 program, not {per_round}")
        self.per_round, self.alpha, self.window, self.least = per_round, alpha, window, least
        self.by_batches, self.due, self.per_second = by_batches, due, per_second
        self.workloads: dict[int, str] = {}  # task -> its workload key, for ``due``
        self.programs: list[list[int]] = []
        self.best_ms: list[list[float]] = []
        self.handed_out = 0  # rounds handed out so far
        self.out: dict[int, int] = {}  # task -> the size of its batch out (0: not known yet)
        self.handed_at: dict[int, float] = {}  # task -> when its batch out was handed out
        self.turns: dict[int, tuple[float, int]] = {}  # task -> its turns' seconds, programs

    def next_task_id(self) -> int:
        outer = self._outer()  # a weak reference to the TVM object, set by derived_object
        tasks = outer.tasks_
        if not self.programs:
            self.programs, self.best_ms = [[] for _ in tasks], [[] for _ in tasks]
        for task_id in range(len(tasks)):
            self._join(outer, task_id)
        alive = [i for i, task in enumerate(tasks) if not task.is_terminated]
        if not alive:
            return -1
        if self.handed_out < len(tasks):  # the pass that gives every task its first round
            task_id = self.handed_out  # alive: a task ends only after it has been handed out
        else:
            pending = [i for i in alive if self._due(tasks, i)]
            alive = pending or alive
            # The rounds of transplants go heaviest first whatever their programs cost: a task's
            # seconds a program so far are its quick round's, mostly a search these rounds skip.
            cost = {i: 1.0 if pending else self._seconds_a_program(i) for i in alive}
            grads = {
                i: gradient(
                    self.programs[i],
                    self.best_ms[i],
                    float(tasks[i].task_weight),
                    self.per_round,
                    self.alpha,
                    self.window,
                    self.least,
                )
                / cost[i]
                for i in alive
            }
            task_id = max(alive, key=grads.__getitem__)  # the first of equals
        self.handed_out += 1
        self.out[task_id] = 0
        self.handed_at[task_id] = time.monotonic()
        return task_id

    def _seconds_a_program(self, task_id: int) -> float:
        """With ``per_second``, the task's seconds a program so far (its turns from hand-out to
        join: search, builds and runs); otherwise 1."""
        seconds, programs = self.turns.get(task_id, (0.0, 0))
        if not self.per_second or programs <= 0 or seconds <= 0:
            return 1.0
        return seconds / programs

    def _join(self, outer: Any, task_id: int) -> None:
        """Join the task's batch where one is out (``SyncRunner`` has measured it to its end)
        and note its size and the task's best time after it."""
        task = outer.tasks_[task_id]
        if task_id in self.out and task.measure_candidates is not None:
            self.out[task_id] = len(task.measure_candidates)
        if task.runner_futures is None:  # no batch out: none made (terminated) or joined
            self.out.pop(task_id, None)
            return
        outer.join_running_task(task_id)
        size = self.out.pop(task_id, 0)
        seconds, programs = self.turns.get(task_id, (0.0, 0))
        started = self.handed_at.pop(task_id, time.monotonic())
        self.turns[task_id] = (seconds + time.monotonic() - started, programs + size)
        self.programs[task_id].append(self.per_round if self.by_batches else size)
        self.best_ms[task_id].append(best_ms(outer.database_, task.ctx.mod))

    def _due(self, tasks: Any, task_id: int) -> bool:
        """Whether the task has its round of transplants still to come (``due``)."""
        if self.due is None:
            return False
        if task_id not in self.workloads:
            self.workloads[task_id] = workload_key(tasks[task_id].ctx.mod)
        return self.due.due(self.workloads[task_id])


def best_ms(database: Any, mod: Any) -> float:
    """The best mean time (ms) of workload ``mod`` in ``database``: ``math.inf`` where no
    program of it ran (or there is no database)."""
    if database is None or not database.has_workload(mod):
        return math.inf
    top = database.get_top_k(database.commit_workload(mod), 1)
    if not top or not top[0].run_secs:
        return math.inf
    mean = mean_secs(top[0].run_secs)
    return 1e3 * mean if 0 < mean < FAILED_COST else math.inf


def task_scheduler(name: str, per_round: int, due: RoundsDue | None = None) -> Any:
    """``tune_tasks``' task scheduler for ``name`` (:data:`tcl.tuning.allot.TASK_SCHEDULERS`)
    and rounds of ``per_round`` programs: MetaSchedule's "gradient" by name, or a
    :class:`ProgramsGradient` ("programs-floor": its count at least
    :data:`tcl.tuning.allot.PROGRAMS_FLOOR`; "transplants-first": rounds counted as
    MetaSchedule's, the rounds of transplants ``due`` first; "per-second": the rounds of
    transplants first, then "programs-floor"'s gradient a second of the task's turns)."""
    check_task_scheduler(name)
    if name == "gradient":
        return name
    if name == "transplants-first":
        return ProgramsGradient(per_round, by_batches=True, due=due)
    if name == "per-second":
        return ProgramsGradient(per_round, least=PROGRAMS_FLOOR, due=due, per_second=True)
    return ProgramsGradient(per_round, least=PROGRAMS_FLOOR if name == "programs-floor" else 0)


__all__ = ["ProgramsGradient", "best_ms", "task_scheduler"]
