"""MetaSchedule measure callbacks of tcl's own: keeping every measured candidate of a search
in a :class:`~tcl.records.store.RecordStore` (``tcl collect --search``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tcl.records.store import RecordStore


def store_every_candidate(
    store: RecordStore, shash: str, workload: int, target: Any, bar: Any
) -> Any:
    """A MetaSchedule measure callback that appends every measured candidate of the task
    ``shash`` (``workload`` in the store) to ``store``, and advances ``bar``."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    @derived_object
    class StoreEveryCandidate(ms.measure_callback.PyMeasureCallback):
        """Appends every measured candidate of a batch to the store, failures with their
        reason; a program the store already holds is not stored twice."""

        def __init__(self) -> None:
            self.store, self.workload, self.bar = store, workload, bar
            self.target_json = tm.to_py(target.export())
            self.measured = self.failed = 0

        def apply(
            self,
            task_scheduler: Any,
            task_id: int,
            measure_candidates: Any,
            builder_results: Any,
            runner_results: Any,
        ) -> None:
            for candidate, built, ran in zip(
                measure_candidates, builder_results, runner_results, strict=True
            ):
                trace = tm.trace_json(candidate.sch)
                key = tm.trace_key(trace)
                if self.store.has(shash, key):
                    continue
                run_secs = [float(s) for s in ran.run_secs] if ran.run_secs else None
                error = "build" if built.error_msg else "run" if run_secs is None else ""
                message = str(built.error_msg or ran.error_msg or "")
                args = [tm.to_py(a.as_json()) for a in candidate.args_info]
                self.store.add(
                    self.workload, trace, key, run_secs, self.target_json, args, error, message
                )
                self.measured += 1
                self.failed += run_secs is None
            self.bar.update(len(measure_candidates))

    return StoreEveryCandidate()


def stop_after(deadline: float) -> Any:
    """A MetaSchedule measure callback that ends the tuning once the wall clock passes
    ``deadline`` (``time.time()``): after the batch that crosses it, every task still running is
    terminated, so the search stops between rounds and the database keeps every measurement."""
    import time

    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    @derived_object
    class StopAfter(ms.measure_callback.PyMeasureCallback):
        def apply(
            self,
            task_scheduler: Any,
            task_id: int,
            measure_candidates: Any,
            builder_results: Any,
            runner_results: Any,
        ) -> None:
            if time.time() < deadline:
                return
            for index, task in enumerate(task_scheduler.tasks_):
                if not task.is_terminated:
                    task_scheduler.terminate_task(index)

    return StopAfter()
