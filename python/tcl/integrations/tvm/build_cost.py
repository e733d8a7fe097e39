"""What a program costs to build, and a quick round that leaves out the costly ones.

On a CPU most of a program's build is LLVM compiling it, and what LLVM is given grows with the
program's explicit unrolling: MetaSchedule's ``ParallelizeVectorizeUnroll`` asks each block
to unroll its loops up to a step drawn from 0, 16, 64 and 512 (``pragma_auto_unroll_max_step``
after postprocessing), and at 512 the unrolled, vectorized body of a convolution's inner loops
is what takes the time. On one core of a Zen 4, random ResNet-50 programs that unroll up to 512
took a median 1.07 s to build, 4.5x those that unroll by at most 64, and held 44% of the build
time as 15% of the programs (bench/README.md, *A quick round without the costliest builds*).
Such a program can be a task's fastest, so the rounds after keep them; the quick round is there
to give the network a latency soon (``tcl tune --first-round-unroll N``), and the best-scored
program it passed over is measured right after it (:attr:`WithinUnroll.passed_over`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tcl.integrations.tvm.measure import text_of_trace

# The annotation the postprocessing leaves on each loop nest a block unrolls (its largest step).
UNROLL_PRAGMA = "pragma_auto_unroll_max_step"
# Scores at or below zero are read as zero by MetaSchedule's search (its
# ``PredictNormalizedScore``); a kept program's score there is mapped into (0, this] instead, in
# its order, so that it stays above every left-out program's zero.
BELOW_ZERO_SPAN = 1e-9
# The best-scored programs past the bound a quick round's search keeps, for the round after it
# (one is measured; the others stand in where it is already known).
PASSED_OVER_KEPT = 4


def unroll_step(trace: Any) -> int:
    """The largest explicit unroll step a program's ``trace`` (postprocessed) asks of its loops;
    0 where it unrolls nothing."""
    steps = [
        getattr(inst.inputs[1], "value", inst.inputs[1])  # an IntImm, or an int read from JSON
        for inst in trace.insts
        if inst.kind.name == "Annotate" and str(inst.attrs[0]) == UNROLL_PRAGMA
    ]
    return max((step for step in steps if isinstance(step, int)), default=0)


def within_unroll(candidate: Any, most: int) -> bool:
    """Whether a measure candidate unrolls by at most ``most`` steps."""
    return unroll_step(candidate.sch.trace) <= most


def scores_within_unroll(scores: Any, kept: list[bool]) -> np.ndarray:
    """``scores`` as a search reads them (above zero where ``kept``, in their order), and zero,
    below every kept one, where not."""
    out = np.asarray(scores, dtype="float64").copy()
    keep = np.asarray(kept, dtype=bool)
    low = keep & (out <= 0)
    if low.any():
        out[low] = BELOW_ZERO_SPAN * np.exp(out[low] - out[low].max())
    out[~keep] = 0.0
    return out


@derived_object
class WithinUnroll(PyCostModel):
    """``inner``'s scores, with every program that unrolls by more than ``most`` steps scored
    below the others: a search ranked by it picks them only where nothing else is left. Only
    its ``predict`` differs; it neither learns nor is saved (the run's own cost model does).
    ``passed_over``: the programs past the bound it scored, best by ``inner`` first (at most
    :data:`PASSED_OVER_KEPT`, one per trace), those the search would have ranked first."""

    def __init__(self, inner: Any, most: int) -> None:
        super().__init__()
        self.inner, self.most = inner, most
        self.passed: dict[str, tuple[float, Any]] = {}  # trace key -> (score, candidate)

    def load(self, path: str) -> None:
        self.inner.load(path)

    def save(self, path: str) -> None:
        self.inner.save(path)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.inner.update(context, candidates, results)

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        scores = np.asarray(self.inner.predict(context, candidates), dtype="float64")
        kept = [within_unroll(c, self.most) for c in candidates]
        for candidate, score, keep in zip(candidates, scores, kept, strict=True):
            if not keep:
                self.passed[text_of_trace(candidate.sch.trace)] = (float(score), candidate)
        if len(self.passed) > PASSED_OVER_KEPT:  # only the best few are ever wanted
            self.passed = {key: self.passed[key] for key, _ in self.passed_over[:PASSED_OVER_KEPT]}
        return scores_within_unroll(scores, kept)

    @property
    def passed_over(self) -> list[tuple[str, Any]]:
        """The programs past the bound scored so far (trace key, measure candidate), best first."""
        best = sorted(self.passed.items(), key=lambda item: -item[1][0])
        return [(key, candidate) for key, (_, candidate) in best]


__all__ = [
    "BELOW_ZERO_SPAN",
    "PASSED_OVER_KEPT",
    "UNROLL_PRAGMA",
    "WithinUnroll",
    "scores_within_unroll",
    "unroll_step",
    "within_unroll",
]
