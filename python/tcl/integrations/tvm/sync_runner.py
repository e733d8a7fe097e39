"""A MetaSchedule runner that measures each batch to its end before the tuner goes on, and takes
again a measurement whose repeats disagree.

The stock task scheduler measures a batch in the background while it already searches and
builds the next one on the same cores, which skews every measurement on a small machine. A
measurement disturbed by something else on the machine shows as repeats far apart (on a quiet
core they agree within 1-2%); it is taken once more.
"""

from __future__ import annotations

import time
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.runner import PyRunner
from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture

# A measurement whose repeats differ by more than this factor was disturbed (on a quiet core
# they agree within 1-2%): it is taken once more.
REPEATS_DISAGREE = 2.0


@derived_object
class SyncRunner(PyRunner):
    """Runs each batch to completion before returning. The stock task scheduler measures a batch
    in the background while it already searches and builds the next one on the same cores,
    which skews every measurement on a small machine (+5% wall time measured, clean data).
    A candidate whose repeats disagree by more than :data:`REPEATS_DISAGREE` is run once more
    and keeps the steadier of its two measurements: a 3 us kernel on two threads was once
    timed at 3,109, 3,997 and 2.7 us, and a task with one program keeps its first
    measurement (bench/README.md, *How long `tcl quickstart` takes*)."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner
        self.pool = getattr(inner, "pool", None)
        self.batches: list[tuple[float, int]] = []  # (time.time() at the end, candidates run)
        self.measured_again = 0  # candidates run twice for their repeats' disagreement

    def run(self, runner_inputs: list[Any]) -> list[Any]:
        results = [_run_secs(future.result()) for future in self.inner.run(runner_inputs)]
        disturbed = [i for i, r in enumerate(results) if _spread(r) > REPEATS_DISAGREE]
        if disturbed:
            again = self.inner.run([runner_inputs[i] for i in disturbed])
            for i, future in zip(disturbed, again, strict=True):
                retaken = _run_secs(future.result())
                if _spread(retaken) < _spread(results[i]):
                    results[i] = retaken
            self.measured_again += len(disturbed)
        self.batches.append((time.time(), len(results)))
        return [
            LocalRunnerFuture(r, None) if isinstance(r, list) else LocalRunnerFuture(None, r)
            for r in results
        ]


def _run_secs(result: Any) -> list[float] | str:
    """A runner result's costs (s), or its error message."""
    if result.error_msg is not None:
        return str(result.error_msg)
    return [float(x) for x in result.run_secs]


def _spread(result: list[float] | str) -> float:
    """How far a measurement's repeats disagree: the slowest over the fastest (1 for an error,
    which is not taken again)."""
    if isinstance(result, str) or not result or min(result) <= 0:
        return 1.0
    return max(result) / min(result)
