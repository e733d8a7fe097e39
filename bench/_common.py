"""What every benchmark prints beside its figures: the machine and the versions."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any


def ansor_dir() -> Path | None:
    """The directory of real Ansor logs named by ``TCL_ANSOR_DIR``, or None when it is unset
    or not a directory (the logs are not part of the repository)."""
    text = os.environ.get("TCL_ANSOR_DIR", "")
    return Path(text) if text and Path(text).is_dir() else None


def tuned_with_fast_math(work_dir: Path) -> bool:
    """Whether the tuning run in ``work_dir`` used fast math (its report.json says so; a
    directory without a report, or with one from before the option, was tuned with exact
    math). A database is rebuilt from the network as that run tuned it."""
    return _tuned_with(work_dir, "fast_math")


def tuned_with_prepacked_weights(work_dir: Path) -> bool:
    """Whether the tuning run in ``work_dir`` pre-packed the weights (as
    :func:`tuned_with_fast_math`: a database is rebuilt the way its run tuned it)."""
    return _tuned_with(work_dir, "weight_prepack")


def _tuned_with(work_dir: Path, option: str) -> bool:
    import json

    report = work_dir / "report.json"
    return report.exists() and bool(json.loads(report.read_text()).get(option, False))


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import numpy

    import tcl
    from tcl.model import kernels

    flags: list[str] = []
    try:
        with open("/proc/cpuinfo") as f:
            line = next(line for line in f if line.startswith("flags"))
        wanted = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "amx_tile")
        flags = [flag for flag in line.split(":", 1)[1].split() if flag in wanted]
    except (OSError, StopIteration):
        pass
    return {
        "cpu": cpu,
        "cpu_flags": flags,
        "kernel_isa": kernels.active(),
        "kernel_isas_supported": kernels.supported(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "tcl": tcl.__version__,
    }
