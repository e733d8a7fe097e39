"""A GPU task's untuned kernel: the one TVM builds for it without tuning, measured before the
search, so that the tuned network never runs a kernel slower than TVM's own.

Without a tuning database, relax's GPU pipeline schedules every kernel with dlight's rules,
which are written for GPUs. The first programs MetaSchedule's search measures are often slower:
on an H100, BERT-tiny tuned for 1.5 minutes built 1.4x slower than its untuned build. A CUDA run
therefore measures each task's dlight kernel with the same builder and runner as its candidates
(about one build and run a task, in parallel). The network's estimate starts from them, so a
network exists before the first round. The tuned network keeps the database's programs only
for the tasks where they beat dlight's kernel, and leaves the others to dlight.

The measured seconds are kept in ``WORK_DIR/untuned_kernels.json`` by workload key, beside the
database: a resumed run reuses them, and a database's checkpoint builds
(:func:`tcl.tuning.latency.build_library`) make the same choice.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

UNTUNED_FILE = "untuned_kernels.json"


def dlight_rules() -> list[Any]:
    """The rules relax's CUDA pipeline schedules untuned kernels with, in its order
    (``tvm.relax.backend.cuda.pipeline.legalize_passes``)."""
    from tvm.s_tir import dlight as dl

    return [
        dl.gpu.Matmul(),
        dl.gpu.GEMV(),
        dl.gpu.Reduction(),
        dl.gpu.GeneralReduction(),
        dl.gpu.Fallback(),
    ]


def untuned_candidate(task: Any, target: Any) -> Any:
    """``task``'s PrimFunc as relax builds it for ``target`` without tuning: a MetaSchedule
    measure candidate that tcl's builder and runner take like any other."""
    import tvm
    from tvm.s_tir import Schedule
    from tvm.s_tir import dlight as dl
    from tvm.s_tir import meta_schedule as ms

    func = task.dispatched[0]["main"]
    with target:
        mod = dl.ApplyDefaultSchedule(*dlight_rules())(tvm.IRModule({"main": func}))
    return ms.MeasureCandidate(Schedule(mod), ms.arg_info.ArgInfo.from_entry_func(mod, True))


def measure_untuned(
    extracted: list[Any], target: Any, builder: Any, runner: Any
) -> dict[str, float]:
    """Mean seconds of each task's untuned kernel by workload key, measured with ``builder``
    and ``runner`` (tasks whose kernel failed to build or run are left out)."""
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import mean_secs

    candidates = [untuned_candidate(task, target) for task in extracted]
    measured, _ = tm.measure(builder, runner, candidates, target)
    return {
        tm.workload_key(task.dispatched[0]): mean_secs(m.run_secs)
        for task, m in zip(extracted, measured, strict=True)
        if m.run_secs
    }


def load_untuned(work_dir: str | Path) -> dict[str, float]:
    """The untuned kernels' seconds kept in ``work_dir`` (empty where none are); a file that is
    not a table of positive seconds is refused, naming it."""
    from tcl.errors import TclError

    path = Path(work_dir) / UNTUNED_FILE
    if not path.exists():
        return {}
    try:
        table = json.loads(path.read_text())
        seconds = {str(k): float(v) for k, v in table.items()}
    except (ValueError, TypeError, AttributeError, UnicodeDecodeError) as err:
        raise TclError(
            f"{path}: not a table of untuned kernel seconds ({err}); remove it to measure "
            "them again"
        ) from None
    if not all(0 < v < math.inf for v in seconds.values()):
        raise TclError(f"{path}: an untuned kernel's seconds are not a positive number")
    return seconds


def save_untuned(work_dir: str | Path, seconds: dict[str, float]) -> None:
    path = Path(work_dir) / UNTUNED_FILE
    partial = path.with_suffix(".tmp")
    partial.write_text(json.dumps(seconds, indent=1, sort_keys=True))
    partial.replace(path)  # a kept file is a whole one


def untuned_seconds(
    extracted: list[Any], target: Any, builder: Any, runner: Any, work_dir: str | Path
) -> dict[str, float]:
    """The untuned kernels' seconds of ``extracted``'s tasks: those kept in ``work_dir``, the
    others measured now and kept there."""
    from tcl.integrations.tvm.measure import workload_key

    kept = load_untuned(work_dir)
    missing = [t for t in extracted if workload_key(t.dispatched[0]) not in kept]
    if missing:
        kept.update(measure_untuned(missing, target, builder, runner))
        save_untuned(work_dir, kept)
    return kept


def tuned_where_faster(database: Any, untuned: dict[str, float]) -> Any:
    """A database holding ``database``'s records of the tasks whose best program is faster than
    their untuned kernel (``untuned``: seconds by workload key); a task that is not in
    ``untuned`` keeps its records. Building from it leaves every other task to dlight."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.measure import entry_key

    by_task: dict[str, list[Any]] = {}
    for record in database.get_all_tuning_records():
        by_task.setdefault(entry_key(record.workload), []).append(record)
    kept = ms.database.MemoryDatabase()
    for key, records in by_task.items():
        if _best_seconds(records) >= untuned.get(key, math.inf):
            continue
        workload = kept.commit_workload(records[0].workload.mod)
        for r in records:
            kept.commit_tuning_record(
                ms.database.TuningRecord(r.trace, workload, r.run_secs, r.target, r.args_info)
            )
    return kept


def tuned_tasks(database: Any) -> int:
    """How many tasks ``database`` holds programs of."""
    from tcl.integrations.tvm.measure import entry_key

    return len({entry_key(r.workload) for r in database.get_all_tuning_records()})


def _best_seconds(records: list[Any]) -> float:
    """The fastest mean run time among ``records`` (failed runs count as never)."""
    from tcl.integrations.tvm.search import mean_secs

    return min((mean_secs(r.run_secs) for r in records if r.run_secs), default=math.inf)


__all__ = [
    "UNTUNED_FILE",
    "dlight_rules",
    "load_untuned",
    "measure_untuned",
    "tuned_tasks",
    "tuned_where_faster",
    "untuned_candidate",
    "untuned_seconds",
]
