"""A stored program made again on its task: its trace replayed on the task's module, then the
task's postprocessors run, as MetaSchedule runs them on what its search draws.

A trace is stored without its postprocessing (``remove_postproc``): what the postprocessors
decide (the unroll pragmas, the vectorized and parallel loops they rewrite, and whether they
accept the program at all) depends on the target, so a program taken from a database, from
another task (a transplant) or from Droplet's neighbours is postprocessed here for the task
that will measure it. Droplet's walk, the transplants and ``bench/bench_build_cost.py`` make
their programs this way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def postprocessed(sch: Any, postprocs: Iterable[Any]) -> bool:
    """Runs ``postprocs`` (a task's space generator's) on ``sch``, a schedule whose trace was
    replayed without its postprocessing; whether every one accepted it (``sch`` is changed in
    place either way: a rejected one is not to be measured)."""
    sch.enter_postproc()
    return all(postproc.apply(sch) for postproc in postprocs)


def replayed(mod: Any, trace: Any, postprocs: Iterable[Any]) -> Any | None:
    """The schedule of ``trace`` (a ``Trace``) replayed on ``mod`` and postprocessed, or None
    where it does not apply to ``mod`` or a postprocessor rejects it."""
    from tvm.s_tir import Schedule

    try:
        sch = Schedule(mod)
        trace.apply_to_schedule(sch, remove_postproc=True)
        return sch if postprocessed(sch, postprocs) else None
    except Exception:  # TVM raises many kinds of error for a trace that cannot apply
        return None


def measure_candidate(sch: Any) -> Any:
    """MetaSchedule's measure candidate of a postprocessed schedule: the program and its
    arguments (read from the scheduled module's entry function)."""
    from tvm.s_tir import meta_schedule as ms

    return ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_entry_func(sch.mod, True))


__all__ = ["measure_candidate", "postprocessed", "replayed"]
