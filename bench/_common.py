"""What every benchmark prints beside its figures: the machine and the versions; and the
readers the benchmarks share."""

from __future__ import annotations

import gzip
import json
import os
import platform
import statistics
import sys
from pathlib import Path
from typing import Any


def ansor_dir() -> Path | None:
    """The directory of real Ansor logs named by ``TCL_ANSOR_DIR``, or None when it is unset
    or not a directory (the logs are not part of the repository)."""
    text = os.environ.get("TCL_ANSOR_DIR", "")
    return Path(text) if text and Path(text).is_dir() else None


def tuned_as(work_dir: Path) -> Any:
    """The ``TuneOptions`` of the tuning run in ``work_dir``, as its report.json says: how it
    built its network (fast math, pre-packed weights, convolution layout), which a rebuild of its
    database follows (:func:`tcl.tuning.compile.as_tuned`). A directory without a report was
    tuned with exact math and nothing else; a report from before an option, without it."""
    import json

    from tcl.tuning.options import TuneOptions
    from tcl.tuning.report import TuneReport

    report = work_dir / "report.json"
    if not report.exists():
        return TuneOptions(exact_math=True)
    return TuneReport.from_json(json.loads(report.read_text())).settings


# A MetaSchedule database's two files: plain in a tuning run's work directory, gzipped
# (``NAME.gz``) in a committed store or pool.
DATABASE_FILES = ("database_workload.json", "database_tuning_record.json")


def database_text(directory: Path, name: str) -> str:
    """The text of the database file ``name`` (one of :data:`DATABASE_FILES`) of ``directory``:
    a work directory's, or a committed store's ``NAME.gz``."""
    plain = directory / name
    if plain.exists():
        return plain.read_text()
    return gzip.decompress((directory / f"{name}.gz").read_bytes()).decode()


def records_in_order(directory: Path) -> list[tuple[str, Any, float]]:
    """The records of ``directory``'s database (a work directory, or a store with its files
    gzipped) in the order they were measured: (their workload's key as the database holds it,
    the trace as the record holds it (JSON), the mean cost in s; a failed run as
    ``tcl.tuning.allot.FAILED_COST``)."""
    from tcl.tuning.allot import FAILED_COST

    workload_file, record_file = DATABASE_FILES
    lines = database_text(directory, workload_file).splitlines()
    workloads = [json.loads(line)[0] for line in lines]
    out = []
    for line in database_text(directory, record_file).splitlines():
        index, record = json.loads(line)
        seconds = record[1] or []
        cost = sum(seconds) / len(seconds) if seconds else FAILED_COST
        out.append((workloads[index], record[0], min(cost, FAILED_COST)))
    return out


def measured_in_order(directory: Path) -> list[tuple[str, float]]:
    """:func:`records_in_order` without the traces: (workload key, mean cost in s)."""
    return [(workload, cost) for workload, _, cost in records_in_order(directory)]


def against_first(first: dict[int, float], means: dict[int, float]) -> dict[str, Any]:
    """How a pass's mean costs (by program index) compare with the first pass's: the median and
    range of their ratios, over the programs both measured."""
    ratios = [means[i] / first[i] for i in means if i in first]
    return {
        "median": round(statistics.median(ratios), 3),
        "range": [round(min(ratios), 2), round(max(ratios), 2)],
    }


def open_store(directory: Path, scratch: Path) -> Any:
    """The database of ``directory`` (a work directory, or a store with its files gzipped) as a
    MetaSchedule JSONDatabase, its files written plain into a new folder under ``scratch``."""
    from tvm.s_tir import meta_schedule as ms

    here = scratch / str(len(list(scratch.iterdir())))
    here.mkdir()
    for name in DATABASE_FILES:
        (here / name).write_text(database_text(directory, name))
    return ms.database.JSONDatabase(work_dir=str(here))


def training_data(data: Any, holdout: list[str], train_networks: str) -> Any:
    """The records a cost model may train on: every task of no held-out network, or with
    ``train_networks`` (comma-separated) only those networks' tasks, an ablation of the data."""
    training = data.without_networks(holdout)
    if not train_networks:
        return training
    return training.of_networks(data.check_networks(train_networks.split(","), "--train-networks"))


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
