"""A run's curve: the network's estimate after every trial, and its plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tcl.tuning.curves import plot_curves
from tcl.tuning.report import TuneReport

FIGURES: dict[str, Any] = {"network": "net", "platform": "p", "tasks": 2, "tune_seconds": 9.0}


@pytest.mark.parametrize("points", [0, 3])
def test_the_plot_is_a_png_with_or_without_a_curve(tmp_path: Path, points: int) -> None:
    """A run that ended before every task had a program has no curve; its plot still holds the
    reference lines (PyTorch eager, the untuned and the tuned builds)."""
    curve = [
        {"trial": float(t), "seconds": 2.0 * t, "estimated_ms": 3.0 / t}
        for t in range(1, 1 + points)
    ]
    report = TuneReport(
        **FIGURES, latency_ms=1.2, untuned_ms=40.0, torch_ms=2.0, max_abs_error=0.0, curve=curve
    )
    path = tmp_path / "report.png"
    plot_curves([report], path, "net on p")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
