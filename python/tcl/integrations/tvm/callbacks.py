"""MetaSchedule measure callbacks of tcl's own: keeping every measured candidate of a search
in a :class:`~tcl.records.store.RecordStore` (``tcl collect --search``), and handing a tuner's
callbacks only the candidates that were measured (a time budget can leave some unbuilt)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcl.records.store import RecordStore


def measure_callback(apply: Callable[[Any, int, Any, Any, Any], None]) -> Any:
    """A MetaSchedule measure callback that calls ``apply(task_scheduler, task_id,
    measure_candidates, builder_results, runner_results)`` after every measured batch."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    @derived_object
    class Callback(ms.measure_callback.PyMeasureCallback):
        def apply(
            self,
            task_scheduler: Any,
            task_id: int,
            measure_candidates: Any,
            builder_results: Any,
            runner_results: Any,
        ) -> None:
            apply(task_scheduler, task_id, measure_candidates, builder_results, runner_results)

    return Callback()


def store_every_candidate(
    store: RecordStore, shash: str, workload: int, target: Any, bar: Any, kept: dict[str, int]
) -> Any:
    """A measure callback that appends every measured candidate of the task ``shash``
    (``workload`` in the store) to ``store``, failures with their reason, never a program the
    store already holds; it advances ``bar`` and counts ``kept["measured"]`` and
    ``kept["failed"]``."""
    from tcl.integrations.tvm import measure as tm

    target_json = tm.to_py(target.export())

    def keep(_: Any, __: int, candidates: Any, built_results: Any, run_results: Any) -> None:
        for candidate, built, ran in zip(candidates, built_results, run_results, strict=True):
            trace = tm.trace_json(candidate.sch)
            key = tm.trace_key(trace)
            if store.has(shash, key):
                continue
            run_secs = [float(s) for s in ran.run_secs] if ran.run_secs else None
            error = "build" if built.error_msg else "run" if run_secs is None else ""
            message = str(built.error_msg or ran.error_msg or "")
            args = [tm.to_py(a.as_json()) for a in candidate.args_info]
            store.add(workload, trace, key, run_secs, target_json, args, error, message)
            kept["measured"] += 1
            kept["failed"] += run_secs is None
        bar.update(len(candidates))

    return measure_callback(keep)


def measured_only(callbacks: list[Any]) -> Any:
    """One measure callback that hands each of ``callbacks`` the batch less the candidates a
    time budget left unbuilt (:data:`tcl.integrations.tvm.measure.NOT_BUILT`). They are not
    failures: the database would otherwise keep them as failed programs, which a resumed run
    never measures, and the cost model would learn them as the slowest programs."""
    from tcl.integrations.tvm.measure import NOT_BUILT

    def apply(scheduler: Any, task_id: int, candidates: Any, built: Any, ran: Any) -> None:
        kept = [i for i, result in enumerate(built) if result.error_msg != NOT_BUILT]
        if len(kept) < len(built):
            candidates, built, ran = ([xs[i] for i in kept] for xs in (candidates, built, ran))
        if kept:
            for callback in callbacks:
                callback.apply(scheduler, task_id, candidates, built, ran)

    return measure_callback(apply)
