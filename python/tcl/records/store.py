"""Append-only, resumable storage of measured programs in MetaSchedule's JSONDatabase format.

A collection directory holds, for one platform:

- ``database_workload.json`` / ``database_tuning_record.json``: a MetaSchedule ``JSONDatabase``
  (TVM can read it directly; ``tcl.read_records`` too);
- ``manifest.json``: the platform, the measurement protocol, the tcl version and, per workload,
  its task name, FLOPs and the networks it occurs in (with weights) — rewritten atomically;
- ``measure_errors.jsonl``: why a failed record failed (build, run, timeout), by trace;
- ``noise.jsonl``: second measurements of a sample of programs.

One process writes a store at a time: :class:`WriterLock` holds an exclusive ``flock`` on
``DIR/.lock`` (a second writer is refused with the holder's pid; the kernel drops the lock when
its holder dies, however it ends). Every line is written with one ``write`` on a file opened for
appending, after the line is complete; a process killed at any moment leaves at most a torn last
line, which the next open cuts off. Programs are identified by their trace with decisions, so a
resumed collection never measures a stored program twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

WORKLOADS = "database_workload.json"
RECORDS = "database_tuning_record.json"
MANIFEST = "manifest.json"
ERRORS = "measure_errors.jsonl"
NOISE = "noise.jsonl"
FAILED_SECONDS = 1e10  # MetaSchedule's run time for a failed candidate


def program_id(key: str) -> str:
    """A short id of a program (its trace key) for the side files."""
    return hashlib.sha1(key.encode()).hexdigest()[:16]


def _trim_torn_tail(path: Path) -> None:
    """Cuts a last line that has no newline: the write it came from never completed."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        f.seek(0)
        data = f.read()
        f.truncate(data.rfind(b"\n") + 1)


def _append_line(path: Path, obj: Any) -> None:
    line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _lines(path: Path) -> list[Any]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


LOCK = ".lock"
_HELD: dict[str, tuple[int, int]] = {}  # real path -> (descriptor, holders) of this process


class WriterLock:
    """The exclusive writer lock of a directory, shared by every holder in this process (so
    that one process may open a store twice) and released when the last one closes."""

    def __init__(self, directory: str | Path, what: str = "a store") -> None:
        self.key = os.path.realpath(directory)
        self._released = True  # until acquired: a refused lock has nothing to release
        fd, holders = _HELD.get(self.key, (-1, 0))
        if holders == 0:
            fd = _acquire(self.key, f"{directory} is {what}")
        _HELD[self.key] = (fd, holders + 1)
        self._released = False

    def close(self) -> None:
        if self._released:
            return
        self._released = True
        fd, holders = _HELD.pop(self.key)
        if holders > 1:
            _HELD[self.key] = (fd, holders - 1)
        else:
            os.close(fd)  # closing the descriptor drops the flock

    def __del__(self) -> None:
        self.close()


def _acquire(directory: str, what: str) -> int:
    """An open descriptor of DIRECTORY/.lock holding its exclusive flock, with our pid in it."""
    import fcntl

    from tcl.errors import TclError

    fd = os.open(os.path.join(directory, LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise TclError(
            f"{what} that process {holder} is writing; one writer at a time (wait for it or "
            "stop it)"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class RecordStore:
    """One platform's collection directory (created if absent, resumed if present), written by
    one process at a time."""

    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = WriterLock(self.dir, "a collection")
        for name in (WORKLOADS, RECORDS, ERRORS, NOISE):
            _trim_torn_tail(self.dir / name)
        self.workload_index: dict[str, int] = {}
        workloads = _lines(self.dir / WORKLOADS)
        for i, entry in enumerate(workloads):
            self.workload_index.setdefault(entry[0], i)
        self.num_workloads = len(workloads)
        self.keys: dict[int, set[str]] = defaultdict(set)
        self.records = 0
        for entry in _lines(self.dir / RECORDS):
            self.keys[entry[0]].add(json.dumps(entry[1][0], separators=(",", ":")))
            self.records += 1
        self.manifest: dict[str, Any] = (
            json.loads((self.dir / MANIFEST).read_text()) if (self.dir / MANIFEST).exists() else {}
        )

    # -- workloads and records -----------------------------------------------------------------
    def workload(self, entry: list[str]) -> int:
        """Index of a workload (``[shash, base64]``), appended on first use."""
        shash = entry[0]
        if shash not in self.workload_index:
            _append_line(self.dir / WORKLOADS, entry)
            self.workload_index[shash] = self.num_workloads
            self.num_workloads += 1
        return self.workload_index[shash]

    def count(self, shash: str) -> int:
        index = self.workload_index.get(shash)
        return 0 if index is None else len(self.keys[index])

    def has(self, shash: str, key: str) -> bool:
        index = self.workload_index.get(shash)
        return index is not None and key in self.keys[index]

    def add(
        self,
        workload: int,
        trace: list[Any],
        key: str,
        run_secs: list[float] | None,
        target: dict[str, Any],
        args_info: list[Any],
        error: str = "",
        message: str = "",
    ) -> None:
        """Stores one measured (or failed) program. The error note is written first: a kill
        between the two writes leaves an orphan note, never a failure without its reason."""
        if run_secs is None:
            _append_line(
                self.dir / ERRORS,
                {
                    "workload": workload,
                    "trace": program_id(key),
                    "error": error,
                    "message": message,
                },
            )
            run_secs = [FAILED_SECONDS]
        _append_line(self.dir / RECORDS, [workload, [trace, run_secs, target, args_info]])
        self.keys[workload].add(key)
        self.records += 1

    def add_unmeasured(
        self,
        workload: int,
        trace: list[Any],
        key: str,
        target: dict[str, Any],
        args_info: list[Any],
    ) -> None:
        """Stores a candidate without measuring it (``run_secs`` null, as MetaSchedule writes
        an unmeasured TuningRecord): the pools the RDU sampler chooses from."""
        _append_line(self.dir / RECORDS, [workload, [trace, None, target, args_info]])
        self.keys[workload].add(key)
        self.records += 1

    def add_noise(self, workload: int, key: str, first: list[float], second: list[float]) -> None:
        # The 1-minute load average tells measurements taken beside other work from quiet ones.
        _append_line(
            self.dir / NOISE,
            {
                "workload": workload,
                "trace": program_id(key),
                "first": first,
                "second": second,
                "load": round(os.getloadavg()[0], 2),
            },
        )

    # -- manifest ------------------------------------------------------------------------------
    def update_manifest(self, update: dict[str, Any]) -> None:
        """Merges ``update`` (tasks and networks are merged by key) and rewrites atomically."""
        for key, value in update.items():
            if key in ("tasks", "networks") and isinstance(value, dict):
                merged = self.manifest.setdefault(key, {})
                for name, entry in value.items():
                    if key == "tasks" and name in merged:
                        merged[name]["networks"].update(entry["networks"])
                    else:
                        merged[name] = entry
            else:
                self.manifest[key] = value
        tmp = self.dir / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True))
        os.replace(tmp, self.dir / MANIFEST)

    def errors(self) -> list[dict[str, Any]]:
        return _lines(self.dir / ERRORS)

    def noise(self) -> list[dict[str, Any]]:
        return _lines(self.dir / NOISE)
