"""Turns the paths a user gives (files, directories, globs, .gz) into record inputs.

An Ansor/TenSet log is any ``.json``, ``.jsonl`` or ``.log`` file (optionally ``.gz``); a
MetaSchedule database is a ``*tuning_record*.json`` file read together with the
``*workload*.json`` file beside it (the names ``JSONDatabase`` writes). A directory is searched
recursively; one that holds a tuning-record file is a MetaSchedule work directory and gives
only its databases.
"""

from __future__ import annotations

import contextlib
import glob
import gzip
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

Buffer = bytes | memoryview
ANSOR = "ansor"
METASCHEDULE = "metaschedule"
_SUFFIXES = (".json", ".jsonl", ".log")


# Record files are read in pieces of about this many bytes, each cut after a newline: memory stays
# bounded by a piece and the longest line whatever a file (or a .gz) expands to, and a file that
# shrinks while it is read is an error rather than a SIGBUS (nothing is memory-mapped).
PIECE_BYTES = 64 << 20


@dataclass(frozen=True)
class RecordSource:
    """One input: a log, or a MetaSchedule tuning-record file with its workload file."""

    format: str
    path: Path
    workload_path: Path | None = None

    def pieces(self) -> Iterator[tuple[Buffer, Buffer]]:
        """The file in pieces of whole lines, each with the workload file's contents (empty for a
        log). A MetaSchedule tuning-record file comes whole: its records refer to lines of the
        workload file, which the core reads with every input."""
        if self.workload_path is None:
            for piece in read_pieces(self.path):
                yield piece, b""
            return
        _, _, data, _, workloads = self.read()
        yield data, workloads

    def read(self) -> tuple[str, str, Buffer, str, Buffer]:
        """The whole source as the tuple :func:`tcl.records.read_inputs` takes: (format, name, data,
        workload_name, workload_data)."""
        data = read_bytes(self.path)
        if self.workload_path is None:
            return (self.format, str(self.path), data, "", b"")
        workloads = read_bytes(self.workload_path)
        return (self.format, str(self.path), data, str(self.workload_path), workloads)


def read_pieces(path: Path) -> Iterator[Buffer]:
    """A plain or ``.gz`` file in pieces of whole lines (the last may lack its newline), each read
    straight into its own buffer; an empty file gives one empty piece. Raises
    :class:`tcl.errors.TclError` for an unreadable gzip stream and for a file that shrinks while
    it is read."""
    carry, pieces = b"", 0  # carry: bytes read after the last newline
    with _reading(path) as (f, size):
        total = 0
        while True:
            buf = bytearray(len(carry) + PIECE_BYTES)
            buf[: len(carry)] = carry
            got = f.readinto(memoryview(buf)[len(carry) :])
            if not got:
                break
            total += got
            end = len(carry) + got
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                carry = bytes(buf[:end])  # a line longer than a piece: keep reading
                continue
            carry = bytes(buf[cut:end])
            pieces += 1
            yield memoryview(buf)[:cut]
        _check_size(path, size, total)
    if carry or not pieces:
        yield carry


def read_bytes(path: Path) -> bytes:
    """A whole file's contents (decompressed when it ends in .gz)."""
    with _reading(path) as (f, size):
        data = f.read()
        _check_size(path, size, len(data))
    return data


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[tuple[io.BufferedIOBase, int | None]]:
    """The open file (decompressing a .gz) and its size when plain; read errors become one
    TclError line naming the file."""
    from tcl.errors import TclError

    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as gz:
                yield gz, None
        else:
            with open(path, "rb") as f:
                yield f, os.fstat(f.fileno()).st_size
    except (OSError, EOFError) as err:  # gzip.BadGzipFile is an OSError
        if isinstance(err, OSError) and err.strerror:
            raise TclError(f"{path}: cannot read this file ({err.strerror})") from None
        raise TclError(f"{path}: not a readable gzip file ({err})") from None


def _check_size(path: Path, size: int | None, read: int) -> None:
    from tcl.errors import TclError

    if size is not None and read < size:
        raise TclError(f"{path}: the file shrank from {size} to {read} bytes while it was read")


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
