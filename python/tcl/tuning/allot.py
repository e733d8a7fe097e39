"""How a round's measurements are shared among a network's tasks.

MetaSchedule measures the same number of candidates of every task a round. A network's time is
not spread that way: in ResNet-50 a handful of convolutions hold most of it, and with two picks
a task the first round is a lottery on them (bench/README.md, *The first round of a live
search*), while a reshape gets as many measurements as the heaviest convolution. Allotted by
time, each task's picks follow its share of the network's time: before every task has been
measured, its weight (how often it runs) x FLOPs; after, its weight x its best measured
program, the time it holds now (FLOPs undercount memory-bound tasks such as depthwise
convolutions, layer norms and softmax). Square-rooted, because a task's first picks gain more
than its later ones. The total a round stays about the same; every task keeps at least one pick.

Within a task, a round can also be trimmed to what the cost model's confidence calls for
(:class:`Confidence`, ``tcl tune --confident K``): a round's picks are its search's best-scored
programs in the model's order, so each measured round says how far down that order the round's
best program was. Where the model's top one or two held it, measuring the rest of the next round
mostly confirms what the model already knows.

Which task has the next round is the task scheduler's choice: MetaSchedule's gradient scheduler
counts a task's rounds as rounds, whatever each measured, so a quick round of two programs counts
as much as a full one; :func:`gradient` counts them by the programs measured
(``tcl tune --task-scheduler programs``, :mod:`tcl.integrations.tvm.scheduler`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# How a round's picks are shared: "even" (MetaSchedule's: the same for every task) or "time"
# (by the task's share of the network's time, square-rooted).
ALLOTS = ("even", "time")
DEFAULT_ALLOT = "even"
# How the round of transplants after the quick one is shared: as a round's picks, or
# "time-exact": by time, where a task's share grows past the even one only with transplants
# that keep every tile decision of their donor (``transplant.Transplants.exact_growth``).
TRANSPLANT_ALLOTS = (*ALLOTS, "time-exact")

# Which task has the next round: "gradient" (MetaSchedule's gradient scheduler, a task's rounds
# counted as rounds), "programs" (the same gradient, its rounds counted by the programs they
# measured: :func:`gradient`) or "programs-floor" (as "programs", a task's programs counted as
# at least :data:`PROGRAMS_FLOOR`), "transplants-first" (MetaSchedule's, every task's round of
# transplants before any full round) or "per-second" (every task's round of transplants first,
# then "programs-floor"'s gradient a second of the task's turns).
TASK_SCHEDULERS = ("gradient", "programs", "programs-floor", "transplants-first", "per-second")
DEFAULT_TASK_SCHEDULER = "gradient"
# In tcl's time-budget runs a task's next batch took off about 0.17 / p of its best time a
# program after p programs measured (p from 5 to 48, convolution networks), but 0.05 a program
# after a quick round of 2, not 0.085: "programs-floor" counts a task's programs as at least
# this many. It is not the default (bench/README.md, *Rounds counted by their programs, at
# least four a task*).
PROGRAMS_FLOOR = 4
# MetaSchedule's gradient scheduler's weight of the recent gain, and the rounds it spans.
GRADIENT_ALPHA = 0.2
GRADIENT_WINDOW = 3

# A task gets at most this many times the round's even share.
MOST_PER_TASK = 4
# MetaSchedule's database keeps a failed run's cost as 1e10 s: no program's time.
FAILED_COST = 1e9
# A program within this factor of its round's best counts as finding it: the measurement moves
# the programs of one batch against each other by several percent (bench/README.md, *How much of
# it a batch shares*).
NEAR_BEST = 1.05
# A confident task's next round measures this many times the most picks its last rounds needed,
# over this many of its last measured rounds.
CONFIDENCE_MARGIN = 2
CONFIDENCE_ROUNDS = 2


def _check_choice(what: str, name: str, choices: tuple[str, ...]) -> None:
    """Refuse ``name`` where it is not one of ``choices``, saying which ``what`` it was."""
    if name not in choices:
        raise ValueError(f"unknown {what} {name!r}: choose one of {', '.join(choices)}")


def check_allot(allot: str, allots: tuple[str, ...] = ALLOTS) -> None:
    """Refuse an ``allot`` that is not one of ``allots`` (:data:`ALLOTS`), by name."""
    _check_choice("allot", allot, allots)


def check_task_scheduler(name: str) -> None:
    """Refuse a task scheduler that is not one of :data:`TASK_SCHEDULERS`, by name."""
    _check_choice("task scheduler", name, TASK_SCHEDULERS)


def gradient(
    programs: Sequence[int],
    best_ms: Sequence[float],
    weight: float,
    per_round: int,
    alpha: float = GRADIENT_ALPHA,
    window: int = GRADIENT_WINDOW,
    least: int = 0,
) -> float:
    """How much of the network's time (ms, x the task's ``weight``) a round of ``per_round``
    programs of a task is expected to take off, from its measured rounds so far: the programs
    each measured and the task's best time after it (``math.inf`` while none ran).
    MetaSchedule's gradient (Ansor's task scheduler): alpha x the gain of the last ``window``
    rounds a round + (1 - alpha) x the best time / the rounds so far, with the rounds counted
    by their programs over ``per_round``: a quick round of 2 in rounds of 16 is an eighth of
    one, or ``least`` sixteenths where ``least`` is more than 2 (:data:`PROGRAMS_FLOOR`). A
    task with no program that ran is worth a round at once (``math.inf``)."""
    if not best_ms or not math.isfinite(best_ms[-1]) or sum(programs) <= 0:
        return math.inf
    best, rounds = best_ms[-1], max(sum(programs), least) / per_round
    recent = 0.0
    if len(best_ms) >= 1 + window and math.isfinite(best_ms[-1 - window]):
        recent = (best_ms[-1 - window] - best) / max(sum(programs[-window:]) / per_round, 1e-9)
    return weight * (alpha * recent + (1 - alpha) * best / rounds)


def root_shares(values: dict[str, float]) -> dict[str, float] | None:
    """Each key's multiple of the even share when shares follow the square root of its value
    (their mean is 1), or None where no value is above 0."""
    roots = {key: math.sqrt(max(0.0, v)) for key, v in values.items()}
    total = sum(roots.values())
    if total <= 0:
        return None
    return {key: len(roots) * r / total for key, r in roots.items()}


def picks_of(per_round: int, share: float, most: int = MOST_PER_TASK) -> int:
    """The picks of a task whose share is ``share`` in a round of ``per_round`` a task: at least
    one, at most ``most`` (:data:`MOST_PER_TASK`) times ``per_round``."""
    return max(1, min(most * per_round, round(per_round * share)))


def quick_picks_of(first_round: int, share: float) -> int:
    """The quick round's picks of a task whose share is ``share`` in a quick round of
    ``first_round`` a task: :func:`picks_of`, never more than ``first_round``. The quick round
    is there to give the network a latency soon, so a light task measures fewer and no task
    more (``tcl tune --first-round-allot time``)."""
    return picks_of(first_round, share, most=1)


@dataclass
class Allotment:
    """One run's sharing of rounds by time, kept by every task's search strategy: ``weights``
    and ``work`` (weight x FLOPs) by workload key; each task reports what it measured
    (:meth:`measured`), and once every task has been measured the shares follow the time each
    holds (weight x best cost). A task with no successful program then keeps the even share."""

    weights: dict[str, float]
    work: dict[str, float]
    best: dict[str, float] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def measured(self, key: str, costs: list[float]) -> None:
        """The task ``key`` measured programs of these mean costs (s; none where all failed;
        a failed run's placeholder cost counts for nothing)."""
        self.seen.add(key)
        for cost in costs:
            if 0 < cost < min(FAILED_COST, self.best.get(key, math.inf)):
                self.best[key] = cost

    def share(self, key: str) -> float:
        """The task's multiple of a round's even share."""
        if key not in self.weights:
            return 1.0
        if not self.seen.issuperset(self.weights):  # a task not measured yet: by work
            return (root_shares(self.work) or {}).get(key, 1.0)
        timed = {k: self.weights[k] * self.best[k] for k in self.weights if k in self.best}
        if key not in timed:
            return 1.0
        return (root_shares(timed) or {}).get(key, 1.0)

    def picks(self, key: str, per_round: int) -> int:
        """The task's programs in a round of ``per_round`` a task."""
        return picks_of(per_round, self.share(key))


def picks_needed(costs: list[float]) -> int | None:
    """How many of a measured round's programs, in the order the cost model ranked them, it
    took to come within :data:`NEAR_BEST` of the round's best; None where the round says
    nothing of the model's order (fewer than 3 programs, or none ran: costs of 0, above
    :data:`FAILED_COST` or not finite)."""
    ran = [cost for cost in costs if 0 < cost < FAILED_COST]
    if len(costs) < 3 or not ran:
        return None
    best = min(ran)
    return 1 + next(i for i, cost in enumerate(costs) if 0 < cost <= best * NEAR_BEST)


@dataclass
class Confidence:
    """One task's trimming of its rounds by how sure its cost model has been: after each
    measured round, :func:`picks_needed`; a later round measures :data:`CONFIDENCE_MARGIN`
    times the most its last :data:`CONFIDENCE_ROUNDS` rounds needed, no fewer than ``fewest``
    and no more than the round's batch. A task whose rounds have said nothing yet measures
    its whole batch."""

    fewest: int
    needed: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.fewest < 1:
            raise ValueError(f"a confident round measures at least 1 program, not {self.fewest}")

    def measured(self, costs: list[float]) -> None:
        """The task measured a round of programs of these mean costs (s), in the model's
        order (failed ones as :data:`FAILED_COST` or more)."""
        needed = picks_needed(costs)
        if needed is not None:
            self.needed.append(needed)

    def keep(self, batch: int) -> int:
        """How many of a round of ``batch`` best-scored programs to measure."""
        if not self.needed:
            return batch
        sure = CONFIDENCE_MARGIN * max(self.needed[-CONFIDENCE_ROUNDS:])
        return min(batch, max(self.fewest, sure))


def allotment(extracted: list[Any], allot: str) -> Allotment | None:
    """The run's :class:`Allotment` of ``extracted`` for ``allot``, or None where every task
    gets the even share. Tasks are keyed by their workload's structural hash, as in
    :func:`tcl.tuning.tune.task_weights`; their work is weight x FLOPs."""
    check_allot(allot)
    if allot == "even":
        return None
    from tvm.s_tir.analysis import estimate_tir_flops

    from tcl.integrations.tvm.measure import workload_key

    weights, work = {}, {}
    for task in extracted:
        key = workload_key(task.dispatched[0])
        weights[key] = float(task.weight)
        work[key] = weights[key] * max(0.0, float(estimate_tir_flops(task.dispatched[0])))
    return Allotment(weights, work)


__all__ = [
    "ALLOTS",
    "CONFIDENCE_MARGIN",
    "CONFIDENCE_ROUNDS",
    "DEFAULT_ALLOT",
    "DEFAULT_TASK_SCHEDULER",
    "FAILED_COST",
    "GRADIENT_ALPHA",
    "GRADIENT_WINDOW",
    "MOST_PER_TASK",
    "NEAR_BEST",
    "PROGRAMS_FLOOR",
    "TASK_SCHEDULERS",
    "TRANSPLANT_ALLOTS",
    "Allotment",
    "Confidence",
    "allotment",
    "check_allot",
    "check_task_scheduler",
    "gradient",
    "picks_needed",
    "picks_of",
    "quick_picks_of",
    "root_shares",
]
