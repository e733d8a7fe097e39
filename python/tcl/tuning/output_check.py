"""Does the built network compute what the model does? Its output against PyTorch's (or the
untuned build's), with a tolerance that follows from the outputs' size: fast math and another
order of float32 sums stay near 1e-6 of it, a wrong kernel is off by far more."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

OUTPUT_TOLERANCE = 1e-2  # of the outputs' size (OutputCheck.wrong)


def output_difference(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest ``|got - expected|``; infinite where the shapes differ or one holds a NaN or
    an infinity where the other does not (the same one at the same place counts as equal)."""
    if got.shape != expected.shape:
        return math.inf
    got, expected = got.astype(np.float64), expected.astype(np.float64)
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    with np.errstate(invalid="ignore"):  # inf - inf where the infinities differ: NaN, then inf
        diff = np.where(same, 0.0, np.abs(got - expected))
    return float(np.nan_to_num(diff, nan=math.inf, posinf=math.inf).max(initial=0.0))


@dataclass(frozen=True)
class OutputCheck:
    """The tuned build's first output against the reference (PyTorch's, else the untuned
    build's), and the untuned build's against PyTorch's where PyTorch ran: a wrong untuned build
    says TVM imports or compiles the network wrongly, whatever the tuning."""

    tuned_error: float  # largest |tuned - reference|
    scale: float  # largest finite |reference|
    untuned_error: float | None = None  # largest |untuned - PyTorch|; None without PyTorch

    def wrong(self, error: float) -> bool:
        """Whether ``error`` is more than arithmetic can explain: fast math and another order
        of float32 sums stay near 1e-6 of the outputs' size; a wrong kernel is off by far more."""
        return error > OUTPUT_TOLERANCE * max(1.0, self.scale)

    @classmethod
    def of(
        cls, tuned: np.ndarray, reference: np.ndarray, untuned: np.ndarray | None = None
    ) -> OutputCheck:
        values = np.abs(reference.astype(np.float64))
        return cls(
            tuned_error=output_difference(tuned, reference),
            scale=float(values[np.isfinite(values)].max(initial=0.0)),
            untuned_error=None if untuned is None else output_difference(untuned, reference),
        )
