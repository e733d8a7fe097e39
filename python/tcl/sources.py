"""Turns the paths a user gives (files, directories, globs, .gz) into record inputs.

An Ansor/TenSet log is any ``.json``, ``.jsonl`` or ``.log`` file (optionally ``.gz``); a
MetaSchedule database is a ``*tuning_record*.json`` file read together with the
``*workload*.json`` file beside it (the names ``JSONDatabase`` writes). A directory is searched
recursively; one that holds a tuning-record file is a MetaSchedule work directory and gives
only its databases.
"""

from __future__ import annotations

import glob
import gzip
import mmap
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Buffer = bytes | mmap.mmap
ANSOR = "ansor"
METASCHEDULE = "metaschedule"
_SUFFIXES = (".json", ".jsonl", ".log")


@dataclass(frozen=True)
class RecordSource:
    """One input: a log, or a MetaSchedule tuning-record file with its workload file."""

    format: str
    path: Path
    workload_path: Path | None = None

    def read(self, *, mapped: bool = False) -> tuple[str, str, Buffer, str, Buffer]:
        """The tuple ``tcl._core.read_records`` takes: (format, name, data, wname, wdata).
        ``mapped`` maps large plain files instead of reading them (the parser threads then fault
        the pages in, in parallel)."""
        data = read_bytes(self.path, mapped=mapped)
        if self.workload_path is None:
            return (self.format, str(self.path), data, "", b"")
        workloads = read_bytes(self.workload_path, mapped=mapped)
        return (self.format, str(self.path), data, str(self.workload_path), workloads)


# Files at least this large are mapped rather than read. A map keeps a descriptor open for as long
# as it lives (Python's mmap holds a duplicate): mapping only large files keeps a directory of
# thousands of small logs under any descriptor limit, while large ones still avoid a copy.
MAP_AT_BYTES = 16 << 20


def read_bytes(path: Path, *, mapped: bool = False) -> Buffer:
    """A file's contents (decompressed when it ends in .gz), as bytes or, for a large plain file
    when ``mapped``, a read-only map."""
    if mapped and path.suffix != ".gz":
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size >= MAP_AT_BYTES:
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            return f.read()
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as err:
            raise ValueError(f"{path}: not a readable gzip file ({err})") from err
    return data


def _base_name(path: Path) -> str:
    return path.name[:-3] if path.name.endswith(".gz") else path.name


def _is_record_file(path: Path) -> bool:
    return _base_name(path).endswith(_SUFFIXES)


def _metaschedule_pair(path: Path) -> RecordSource | None:
    name = _base_name(path)
    if "tuning_record" in name:
        workload = path.with_name(path.name.replace("tuning_record", "workload"))
        if not workload.exists():
            raise FileNotFoundError(
                f"{path} is a MetaSchedule tuning-record file but its workload file {workload} "
                "is missing"
            )
        return RecordSource(METASCHEDULE, path, workload)
    if "workload" in name:
        records = path.with_name(path.name.replace("workload", "tuning_record"))
        if not records.exists():
            raise FileNotFoundError(
                f"{path} is a MetaSchedule workload file but its tuning-record file {records} "
                "is missing"
            )
        return RecordSource(METASCHEDULE, records, path)
    return None


def _from_file(path: Path) -> RecordSource:
    return _metaschedule_pair(path) or RecordSource(ANSOR, path)


def _scan_directory(directory: Path, visited: set[tuple[int, int]] | None = None) -> list[Path]:
    """Record files under ``directory``. A MetaSchedule work directory (one holding a
    tuning-record file) contributes only its databases: its ``logs/`` are tuner text logs. Each
    real directory is visited once (by device and inode), so symlink loops end; entries that are
    neither files nor directories (FIFOs, devices) are not record files."""
    visited = set() if visited is None else visited
    try:
        info = directory.stat()
        entries = sorted(directory.iterdir())
    except OSError as err:
        from tcl.errors import TclError

        raise TclError(f"{directory}: cannot list this directory ({err.strerror})") from None
    if (info.st_dev, info.st_ino) in visited:
        return []
    visited.add((info.st_dev, info.st_ino))
    files = [p for p in entries if p.is_file() and _is_record_file(p)]
    databases = [p for p in files if "tuning_record" in p.name]
    if databases:
        return databases
    found = list(files)
    for sub in entries:
        if sub.is_dir():
            found.extend(_scan_directory(sub, visited))
    return found


def find_sources(paths: Iterable[str | Path]) -> list[RecordSource]:
    """Expands paths into record sources, in the order given (directories sorted), once each."""
    found: list[RecordSource] = []
    seen: set[tuple[Path, Path | None]] = set()

    def add(source: RecordSource) -> None:
        key = (source.path.resolve(), source.workload_path and source.workload_path.resolve())
        if key not in seen:
            seen.add(key)
            found.append(source)

    for raw in paths:
        text = str(raw)
        if any(ch in text for ch in "*?[") and not Path(text).exists():
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise FileNotFoundError(f"no file matches {text!r}")
            expanded = [Path(m) for m in matches]
        else:
            expanded = [Path(text)]
        for path in expanded:
            if path.is_dir():
                files = _scan_directory(path)
                if not files:
                    raise FileNotFoundError(f"{path}: no record files (.json, .jsonl, .log[.gz])")
                for file in files:
                    add(_from_file(file))
            elif path.is_file():
                add(_from_file(path))
            else:
                raise FileNotFoundError(f"no such file or directory: {path}")
    return found
