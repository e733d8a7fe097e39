"""Reads record sources with the C++ core a bounded batch at a time.

Files are read in pieces of whole lines (:data:`tcl.records.sources.PIECE_BYTES`) and handed to the
core's :class:`RecordReader` a batch at a time; the core keeps what it parsed (tokens and
tables, not the text) and merges everything once at the end, exactly as one read over all the
data would (tasks, targets and kinds in order of first appearance, lines counted from each
file's start). Memory is therefore bounded by a batch of text plus the records, never by a file:
a 1 MB ``.gz`` may expand to gigabytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tcl import _core
from tcl.progress import bar as progress_bar
from tcl.records import sources
from tcl.records.sources import Buffer, RecordSource


@dataclass(frozen=True)
class CoreOptions:
    """The reader's settings besides the vocabulary."""

    strict: bool
    num_threads: int
    max_len: int
    num_fields: int
    skip_kinds: tuple[str, ...]
    progress: bool = False  # a bar of the bytes read, on stderr


@dataclass
class _Batch:
    inputs: list[tuple[str, str, Buffer, str, Buffer]] = field(default_factory=list)
    files: list[int] = field(default_factory=list)  # the source each input comes from
    size: int = 0


def _reader(vocab: list[str], frozen: bool, options: CoreOptions) -> _core.RecordReader:
    return _core.RecordReader(
        vocab,
        frozen,
        options.strict,
        options.num_threads,
        options.max_len,
        options.num_fields,
        list(options.skip_kinds),
    )


def read_buffers(
    inputs: list[tuple[str, str, Buffer, str, Buffer]],
    vocab: list[str],
    frozen: bool,
    options: CoreOptions,
) -> dict[str, Any]:
    """The core's result (columns and tables as a dict) for inputs already in memory, each a
    whole file: (format, name, data, workload_name, workload_data)."""
    reader = _reader(vocab, frozen, options)
    reader.add(inputs, list(range(len(inputs))))
    return reader.finish([name for _, name, *_ in inputs])


def read_sources(
    found: list[RecordSource], vocab: list[str], frozen: bool, options: CoreOptions
) -> dict[str, Any]:
    """The core's result (columns and tables as a dict) for every source, a batch at a time."""
    reader = _reader(vocab, frozen, options)
    # Compressed files expand as they are read: their total is not known in advance.
    sizes = [s.path.stat().st_size for s in found if s.path.suffix != ".gz"]
    total = sum(sizes) if len(sizes) == len(found) else None
    with progress_bar(options.progress, total, "reading", "B") as shown:
        for batch in _batches(found):
            reader.add(batch.inputs, batch.files)
            shown.update(batch.size)
            batch.inputs.clear()  # the text is parsed: free it before the next batch is read
    return reader.finish([str(source.path) for source in found])


def _batches(found: list[RecordSource]) -> Iterator[_Batch]:
    """Pieces of the sources, in order, gathered until a batch holds PIECE_BYTES of text; one
    piece of a file per batch (the core numbers a piece's lines after those of the file's
    pieces in earlier batches)."""
    batch = _Batch()
    for index, source in enumerate(found):
        for piece, workloads in source.pieces():
            if batch.files and batch.files[-1] == index:
                yield batch
                batch = _Batch()
            workload_name = str(source.workload_path or "")
            batch.inputs.append((source.format, str(source.path), piece, workload_name, workloads))
            batch.files.append(index)
            batch.size += len(piece)
            if batch.size >= sources.PIECE_BYTES:
                yield batch
                batch = _Batch()
    if batch.inputs:
        yield batch
