"""Droplet, apache-tvm's post-optimization (``tvm.s_tir.meta_schedule.post_optimization``), as
the last pass of a tuning run (``tcl tune --post-opt N``).

Droplet walks a task's space by coordinate descent from its best program: each neighbour
changes one value of the program (a parallel or vectorize annotation, or one tile factor, among
powers of two), a faster neighbour becomes the centre, and the walk ends where none is. TVM's
``PostOpt`` drives it from the JSON database files, measures with a LocalBuilder and LocalRunner
of its own (two runs of three repeats, no minimum time) and leaves out the postprocessors of a
random quarter of the neighbours. Here TVM's ``Droplet`` and ``Space`` choose the neighbours,
and each is measured as the search measures its candidates: its decisions applied to the task's
module and the task's postprocessors run (MetaSchedule's way with a mutated trace; a tile factor
that no longer divides its loop is mended by TVM into a perfect tiling), built and run by the
run's builder and runner under its protocol, and committed to the run's database. A program the
database already holds is not measured again: Droplet gets its stored time.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.patches import enters_tvm
from tcl.integrations.tvm.replay import measure_candidate, replayed
from tcl.integrations.tvm.search import mean_secs

FAILED = 10000.0  # Droplet's time for a neighbour that did not run (post_optimization.space)
NOT_RUN = 1e10  # MetaSchedule's stored time of a failed candidate (AddToDatabase)


class _Spent(Exception):
    """A task's share of the pass is measured: its walk stops here."""


@dataclass
class Walk:
    """One task's descent: the neighbours Droplet asks for, measured within ``budget``."""

    context: Any  # the task's TuneContext: its module, target and postprocessors
    workload: Any  # its entry in the database
    database: Any
    builder: Any
    runner: Any
    budget: int
    known: dict[str, list[float]] = field(default_factory=dict)  # trace key -> stored seconds
    measured: int = 0

    def schedule(self, config: list[Any]) -> Any:
        """The program of a record's JSON (Droplet's neighbour), or None where it fails to
        apply or a postprocessor rejects it."""
        from tvm.s_tir.meta_schedule.database import TuningRecord

        try:
            trace = TuningRecord.from_json(config, self.workload).trace
        except Exception:  # TVM raises many kinds of error for a record it cannot read
            return None
        return replayed(self.workload.mod, trace, self.context.space_generator.postprocs)

    def run(self, configs: list[Any], *_: Any, **__: Any) -> list[list[float]]:
        """Droplet's ``Space.run``: the seconds of each neighbour's runs (FAILED where it did
        not run). New programs are measured while the budget lasts, then the walk stops."""
        if self.measured >= self.budget:
            raise _Spent
        results: list[list[float]] = [[FAILED] for _ in configs]
        fresh: dict[str, tuple[Any, list[int]]] = {}  # trace key -> (program, neighbours)
        for i, config in enumerate(configs):
            sch = self.schedule(config)
            if sch is None:
                continue
            key = tm.text_of_trace(sch.trace)
            if key in self.known:
                results[i] = _seen_by_droplet(self.known[key])
            elif key in fresh:
                fresh[key][1].append(i)
            elif len(fresh) < self.budget - self.measured:
                fresh[key] = (sch, [i])
        for key, secs in self._measure([sch for sch, _ in fresh.values()], list(fresh)):
            for i in fresh[key][1]:
                results[i] = _seen_by_droplet(secs)
        return results

    def _measure(self, programs: list[Any], keys: list[str]) -> list[tuple[str, list[float]]]:
        """Builds and runs ``programs``, commits each to the database (a failure with
        MetaSchedule's time for one) and returns (key, seconds) of each."""
        from tvm.s_tir import meta_schedule as ms

        if not programs:
            return []
        target = self.context.target
        candidates = [measure_candidate(sch) for sch in programs]
        measurements, _ = tm.measure(self.builder, self.runner, candidates, target)
        out = []
        for key, candidate, m in zip(keys, candidates, measurements, strict=True):
            secs = m.run_secs or [NOT_RUN]
            self.database.commit_tuning_record(
                ms.database.TuningRecord(
                    candidate.sch.trace, self.workload, secs, target, candidate.args_info
                )
            )
            self.known[key] = secs
            out.append((key, secs))
        self.measured += len(programs)
        return out


def _seen_by_droplet(secs: list[float]) -> list[float]:
    """A program's stored seconds as Droplet takes them: FAILED for one that did not run."""
    return secs if secs[0] < NOT_RUN else [FAILED]


@enters_tvm
def post_optimize(
    contexts: list[Any],
    weights: list[float],
    database: Any,
    builder: Any,
    runner: Any,
    trials: int,
    progress: Callable[[int], Any] = lambda n: None,
) -> int:
    """Droplet from each task's best program in ``database``, measuring at most ``trials``
    programs in all: the tasks that hold most of the network's time (weight x best time) walk
    first, each with its share of what is left. Returns the programs measured."""
    tasks = []
    known = _known_programs(database)
    for context, weight in zip(contexts, weights, strict=True):
        workload = database.commit_workload(context.mod)
        best = database.get_top_k(workload, 1)
        if best:
            share = float(weight) * mean_secs(best[0].run_secs)
            tasks.append((share, context, workload, best[0]))
    tasks.sort(key=lambda task: -task[0])
    left, unshared = trials, sum(task[0] for task in tasks)
    for share, context, workload, best in tasks:
        budget = round(left * share / unshared) if unshared > 0 else 0
        unshared -= share
        if budget < 1:
            continue
        task_known = known.get(tm.entry_key(workload), {})
        walk = Walk(context, workload, database, builder, runner, budget, task_known)
        _descend(walk, best)
        left -= walk.measured
        progress(walk.measured)
    return trials - left


def _descend(walk: Walk, best: Any) -> None:
    """TVM's Droplet from ``best`` (a TuningRecord), its neighbours measured by ``walk``."""
    from tvm.s_tir.meta_schedule.post_optimization.droplet import Droplet

    start = [0, tm.to_py(best.as_json())]  # a line of TVM's database file: [workload, record]
    workload = tm.to_py(walk.workload.as_json())
    with tempfile.TemporaryDirectory() as scratch:  # Droplet writes its start there
        droplet = Droplet(start, workload, walk.context.target, str(Path(scratch) / "log"))
    droplet.space.run = walk.run  # the run's own measurement instead of Droplet's
    with contextlib.suppress(_Spent):
        droplet.tune(n_trial=walk.budget * 64 + 1)  # the walk's budget stops it, not this


def _known_programs(database: Any) -> dict[str, dict[str, list[float]]]:
    """The stored seconds of every program of ``database``, by workload key and trace key."""
    known: dict[str, dict[str, list[float]]] = {}
    for record in database.get_all_tuning_records():
        task = known.setdefault(tm.entry_key(record.workload), {})
        task[tm.text_of_trace(record.trace)] = [float(x) for x in record.run_secs or [NOT_RUN]]
    return known
