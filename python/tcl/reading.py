"""Reads record sources with the C++ core in batches of bounded size.

Files are read in pieces (:data:`tcl.sources.PIECE_BYTES`) and handed to the core a batch at a
time, so memory is bounded by a batch and the records read so far, never by a file (a 1 MB
``.gz`` may expand to gigabytes). Each batch continues the vocabulary of the ones before it, and
:func:`merge` joins their results into exactly what one call over all the data gives: tasks,
targets and kinds in order of first appearance, line numbers counted from each file's start.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tcl import _core, sources
from tcl.errors import RecordError
from tcl.sources import RecordSource


@dataclass(frozen=True)
class CoreOptions:
    """The arguments of ``tcl._core.read_records`` besides the inputs and the vocabulary."""

    strict: bool
    num_threads: int
    max_len: int
    num_fields: int
    skip_kinds: tuple[str, ...]


@dataclass
class _Batch:
    inputs: list[tuple[str, str, bytes, str, bytes]]
    files: list[int]  # the source each input comes from
    first_lines: list[int]
    size: int = 0


def read_sources(
    found: list[RecordSource], vocab: list[str], frozen: bool, options: CoreOptions
) -> dict[str, Any]:
    """The core's result (``tcl._core.read_records``' dict) for every source, read in batches."""
    parts: list[tuple[dict[str, Any], _Batch]] = []
    for batch in _batches(found):
        raw = _read_batch(batch, vocab, frozen, options)
        vocab = list(raw["vocab"])
        batch.inputs = [(f, name, b"", "", b"") for f, name, *_ in batch.inputs]  # free the data
        parts.append((raw, batch))
    names = [str(source.path) for source in found]
    if not parts:
        return _read_batch(_Batch([], [], []), vocab, frozen, options)
    if len(parts) == 1 and parts[0][1].first_lines == [1] * len(found):
        return parts[0][0]  # one batch holding every file whole: nothing to renumber
    return merge(parts, names, vocab)


def _batches(found: list[RecordSource]) -> Iterator[_Batch]:
    batch = _Batch([], [], [])
    for index, source in enumerate(found):
        for piece, workloads in source.pieces():
            if batch.files and batch.files[-1] == index:  # one piece of a file per batch
                yield batch
                batch = _Batch([], [], [])
            workload_name = str(source.workload_path or "")
            batch.inputs.append(
                (source.format, str(source.path), piece.data, workload_name, workloads)
            )
            batch.files.append(index)
            batch.first_lines.append(piece.first_line)
            batch.size += len(piece.data)
            del piece
            if batch.size >= sources.PIECE_BYTES:
                yield batch
                batch = _Batch([], [], [])
    if batch.inputs:
        yield batch


def _read_batch(
    batch: _Batch, vocab: list[str], frozen: bool, options: CoreOptions
) -> dict[str, Any]:
    try:
        return _core.read_records(
            batch.inputs,
            vocab=vocab,
            frozen=frozen,
            strict=options.strict,
            num_threads=options.num_threads,
            max_len=options.max_len,
            num_fields=options.num_fields,
            skip_kinds=list(options.skip_kinds),
        )
    except RecordError as err:
        line = err.line + _line_offset(batch, err.file)
        raise RecordError.at(err.file, line, err.reason, err.field, err.detail) from None


def _line_offset(batch: _Batch, name: str) -> int:
    """Lines before the piece of ``name`` in this batch (0 for a workload file: read whole)."""
    for (_, piece_name, *_), first in zip(batch.inputs, batch.first_lines, strict=True):
        if piece_name == name:
            return first - 1
    return 0


def merge(
    parts: list[tuple[dict[str, Any], _Batch]], names: list[str], vocab: list[str]
) -> dict[str, Any]:
    """One result from the batches' results, renumbering tasks, targets, files and lines."""
    targets: dict[str, int] = {}
    task_ids: dict[tuple[str, str], int] = {}
    tasks: dict[str, list[Any]] = {
        k: [] for k in ("workload_key", "format", "target", "hardware_params")
    }
    columns: dict[str, list[np.ndarray]] = {}
    skipped: dict[str, int] = {}
    examples: dict[str, tuple[str, int, str, str]] = {}
    unknown: dict[str, int] = {}
    for raw, batch in parts:
        target_map = np.array(
            [targets.setdefault(t, len(targets)) for t in raw["targets"]], np.int32
        )
        task_map = np.array(
            _add_tasks(raw["tasks"], raw["targets"], target_map, task_ids, tasks), np.int32
        )
        _add_columns(columns, raw["columns"], batch, task_map, target_map)
        for reason, count in raw["skipped"].items():
            if reason not in skipped:
                file, line, field, detail = raw["skip_examples"][reason]
                examples[reason] = (file, line + _line_offset(batch, file), field, detail)
            skipped[reason] = skipped.get(reason, 0) + count
        for kind, count in raw["unknown_kinds"].items():
            unknown[kind] = unknown.get(kind, 0) + count
    merged = {name: np.concatenate(arrays) for name, arrays in columns.items()}
    for name in ("cost_offsets", "token_offsets"):
        merged[name] = np.concatenate([np.zeros(1, np.int64), merged[name]])
    return {
        "columns": merged,
        "tasks": tasks,
        "targets": list(targets),
        "files": names,
        "vocab": vocab,
        "skipped": skipped,
        "skip_examples": examples,
        "unknown_kinds": unknown,
        "lines": sum(raw["lines"] for raw, _ in parts),
    }


def _add_columns(
    columns: dict[str, list[np.ndarray]],
    c: dict[str, np.ndarray],
    batch: _Batch,
    task_map: np.ndarray,
    target_map: np.ndarray,
) -> None:
    """Appends one batch's columns, renumbered: tasks, targets, files, lines and the offsets
    into the costs and tokens of the batches before it."""
    add = columns.setdefault
    costs_before = sum(len(a) for a in columns.get("costs", []))
    tokens_before = sum(len(a) for a in columns.get("token_kinds", []))
    add("task", []).append(task_map[c["task"]])
    add("target", []).append(target_map[c["target"]])
    add("file", []).append(np.asarray(batch.files, np.int32)[c["file"]])
    offsets = np.asarray(batch.first_lines, np.int64) - 1
    add("line", []).append(c["line"] + offsets[c["file"]])
    for name in (
        "error",
        "mean_cost",
        "timestamp",
        "num_steps",
        "costs",
        "token_kinds",
        "token_fields",
    ):
        add(name, []).append(c[name])
    add("cost_offsets", []).append(c["cost_offsets"][1:] + costs_before)
    add("token_offsets", []).append(c["token_offsets"][1:] + tokens_before)


def _add_tasks(
    part: dict[str, list[Any]],
    part_targets: list[str],
    target_map: np.ndarray,
    task_ids: dict[tuple[str, str], int],
    tasks: dict[str, list[Any]],
) -> list[int]:
    """Global ids of one batch's tasks (a task is its workload key on its target, as in the
    core), adding the new ones to ``tasks``."""
    ids = []
    for k, key in enumerate(part["workload_key"]):
        target = int(part["target"][k])
        identity = (key, part_targets[target])
        if identity not in task_ids:
            task_ids[identity] = len(task_ids)
            tasks["workload_key"].append(key)
            tasks["format"].append(part["format"][k])
            tasks["target"].append(int(target_map[target]))
            tasks["hardware_params"].append(part["hardware_params"][k])
        ids.append(task_ids[identity])
    return ids
