"""A MetaSchedule runner that measures each batch to its end before the tuner goes on, takes
again a measurement whose repeats disagree, and times a quick first round's batches more
briefly than the rounds after it.

The stock task scheduler measures a batch in the background while it already searches and
builds the next one on the same cores, which skews every measurement on a small machine. A
measurement disturbed by something else on the machine shows as repeats far apart (on a quiet
core they agree within 1-2%); it is taken once more.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner
from tvm.s_tir.meta_schedule.runner.local_runner import LocalRunnerFuture

# A measurement whose repeats differ by more than this factor was disturbed (on a quiet core
# they agree within 1-2%): it is taken once more.
REPEATS_DISAGREE = 2.0
# Each repeat of a quick round's measurement runs the kernel for at least this long (the rounds'
# protocol: 20 ms), where the protocol asks for a floor at all.
QUICK_MIN_REPEAT_MS = 10


@dataclass
class QuickTiming:
    """How a quick first round's batches are timed and built: ``repeats`` repeats of at least
    :data:`QUICK_MIN_REPEAT_MS` each, instead of the rounds' protocol (3 of at least 20 ms; 0:
    as the rounds'), and ``opt_level``: LLVM's level of their builds on a CPU (None: as the
    rounds'; read by :class:`tcl.integrations.tvm.measure.PersistentLocalBuilder`). The quick
    round only tells each task's few picks apart and gives the network a first latency. Two
    repeats of 10 ms ran ResNet-50's random programs in 0.71-0.74x the time, but brought no
    quick round of a time budget measurably sooner on one core of a Zen 3 (bench/README.md,
    *A quick round timed more briefly*). ``now``: set by the tasks' search strategies
    (``search.NewProgramsOnly``) as each hands out a batch, whether it is a quick round's; the
    builder builds the batch next and the runner measures it and clears it, so that nothing it
    runs after (Droplet's pass, say) is timed or built as the quick round."""

    repeats: int = 0
    opt_level: int | None = None
    now: bool = False

    def evaluator(self, rounds: EvaluatorConfig) -> EvaluatorConfig:
        """The quick round's timing of a runner that times the rounds as ``rounds`` does: as
        many calls a repeat and the same cache flush, :attr:`repeats` repeats, the repeats'
        floor no longer than :data:`QUICK_MIN_REPEAT_MS` (``rounds`` itself where
        :attr:`repeats` is 0)."""
        if not self.repeats:
            return rounds
        return EvaluatorConfig(
            number=rounds.number,
            repeat=self.repeats,
            min_repeat_ms=min(rounds.min_repeat_ms, QUICK_MIN_REPEAT_MS),
            enable_cpu_cache_flush=rounds.enable_cpu_cache_flush,
        )


@derived_object
class SyncRunner(PyRunner):
    """Runs each batch to completion before returning. The stock task scheduler measures a batch
    in the background while it already searches and builds the next one on the same cores,
    which skews every measurement on a small machine (+5% wall time measured, clean data).
    A candidate whose repeats disagree by more than :data:`REPEATS_DISAGREE` is run once more
    and keeps the steadier of its two measurements: a 3 us kernel on two threads was once
    timed at 3,109, 3,997 and 2.7 us, and a task with one program keeps its first
    measurement (bench/README.md, *How long `tcl quickstart` takes*). ``quick``: where given,
    a batch handed out while its ``now`` is set is timed as it says (``inner``: a MetaSchedule
    runner that reads its ``evaluator_config`` at each batch, as the local and RPC ones do)."""

    def __init__(self, inner: Any, quick: QuickTiming | None = None) -> None:
        super().__init__()
        self.inner, self.quick = inner, quick
        self.pool = getattr(inner, "pool", None)
        self.batches: list[tuple[float, int]] = []  # (time.time() at the end, candidates run)
        self.measured_again = 0  # candidates run twice for their repeats' disagreement

    def run(self, runner_inputs: list[Any]) -> list[Any]:
        rounds = getattr(self.inner, "evaluator_config", None)
        if self.quick is None or not self.quick.now or rounds is None:
            return self._measured(runner_inputs)
        self.quick.now = False  # it marks this batch only: whatever is run next is a round's
        self.inner.evaluator_config = self.quick.evaluator(rounds)
        try:
            return self._measured(runner_inputs)
        finally:
            self.inner.evaluator_config = rounds

    def _measured(self, runner_inputs: list[Any]) -> list[Any]:
        """The batch measured to its end, its disturbed measurements taken again."""
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
