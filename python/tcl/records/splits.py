"""Train/test splits of a record set (Verma et al.'s three settings), all seeded.

- ``within_task``: every task appears on both sides; a fraction of each task's records is held out.
- ``by_task``: whole tasks are held out (new operators on a known platform).
- ``by_target``: whole targets are held out (a known operator on new hardware).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from tcl.records.recordset import RecordSet, rows_by_task


def _check_fraction(test_fraction: float) -> None:
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")


def split_within_task(
    rs: RecordSet, test_fraction: float = 0.2, *, seed: int = 0
) -> tuple[RecordSet, RecordSet]:
    """Holds out ``test_fraction`` of each task's records (at least one where a task has two)."""
    _check_fraction(test_fraction)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(rs), dtype=bool)
    for rows in rows_by_task(rs.columns["task"]):
        if len(rows) < 2:
            continue
        k = max(1, round(len(rows) * test_fraction))
        test[rng.choice(rows, size=min(k, len(rows) - 1), replace=False)] = True
    return rs.select(~test), rs.select(test)


def split_by_task(
    rs: RecordSet, test_fraction: float = 0.2, *, seed: int = 0
) -> tuple[RecordSet, RecordSet]:
    """Holds out ``test_fraction`` of the tasks that have records, with all their records."""
    _check_fraction(test_fraction)
    tasks = np.unique(rs.columns["task"])
    if len(tasks) < 2:
        raise ValueError(f"a by_task split needs at least 2 tasks, got {len(tasks)}")
    rng = np.random.default_rng(seed)
    k = min(max(1, round(len(tasks) * test_fraction)), len(tasks) - 1)
    held_out = rng.choice(tasks, size=k, replace=False)
    test = np.isin(rs.columns["task"], held_out)
    return rs.select(~test), rs.select(test)


def split_by_target(
    rs: RecordSet, test_targets: Iterable[int | str] | None = None, *, seed: int = 0
) -> tuple[RecordSet, RecordSet]:
    """Holds out the records of ``test_targets`` (indices or target strings); by default one
    target drawn with ``seed``."""
    present = np.unique(rs.columns["target"])
    if test_targets is None:
        if len(present) < 2:
            raise ValueError(f"a by_target split needs at least 2 targets, got {len(present)}")
        held_out = [int(np.random.default_rng(seed).choice(present))]
    else:
        held_out = [t if isinstance(t, int) else rs.targets.index(t) for t in test_targets]
    test = np.isin(rs.columns["target"], held_out)
    return rs.select(~test), rs.select(test)
