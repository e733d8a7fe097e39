"""Measured schedule records as numpy columns, read by the C++ core.

>>> rs = tcl.read_records(["tuning_logs/", "tenset/*.json.gz"])
>>> rs.kinds.shape, rs.fields.shape   # (N, max_len), (N, max_len, num_fields)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from tcl.errors import FormatVersionError
from tcl.records.binary import read_arrays, write_arrays
from tcl.records.reading import CoreOptions, read_buffers, read_sources
from tcl.records.sources import Buffer, find_sources
from tcl.records.tokenizer import TokenizerConfig, Vocab, vocab_or_default

RECORDSET_FORMAT_VERSION = 1
NUM_HARDWARE_PARAMS = 8

IntArray = npt.NDArray[np.int32]
Int64Array = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# Per-record columns (length N) and the ragged columns behind them, with their dtypes.
RECORD_COLUMNS: dict[str, type] = {
    "task": np.int32,
    "target": np.int32,
    "error": np.int32,
    "mean_cost": np.float64,
    "timestamp": np.float64,
    "file": np.int32,
    "line": np.int64,
    "num_steps": np.int32,
}
RAGGED_COLUMNS: dict[str, tuple[str, type]] = {
    "costs": ("cost_offsets", np.float64),
    "token_kinds": ("token_offsets", np.int32),
    "token_fields": ("token_offsets", np.float32),
}


@dataclass
class TaskTable:
    """One row per task: a workload on a target.

    ``hardware_params`` is (T, 8) int64 in Ansor's order: num_cores, vector_unit_bytes,
    cache_line_bytes, max_shared_memory_per_block, max_local_memory_per_block,
    max_threads_per_block, max_vthread_extent, warp_size (0 where unknown). ``flops`` is NaN
    where unknown; ``weight`` is how often the task occurs in its network (1 by default).
    """

    workload_key: list[str]
    format: list[str]
    target: IntArray
    hardware_params: Int64Array
    flops: FloatArray
    weight: FloatArray

    def __len__(self) -> int:
        return len(self.workload_key)

    @classmethod
    def from_lists(cls, data: dict[str, Any]) -> TaskTable:
        n = len(data["workload_key"])
        hardware = np.asarray(data["hardware_params"], dtype=np.int64).reshape(
            n, NUM_HARDWARE_PARAMS
        )
        return cls(
            workload_key=list(data["workload_key"]),
            format=list(data["format"]),
            target=np.asarray(data["target"], dtype=np.int32),
            hardware_params=hardware,
            flops=np.asarray(data.get("flops", [np.nan] * n), dtype=np.float64),
            weight=np.asarray(data.get("weight", [1.0] * n), dtype=np.float64),
        )

    def to_lists(self) -> dict[str, Any]:
        return {
            "workload_key": self.workload_key,
            "format": self.format,
            "target": self.target.tolist(),
            "hardware_params": self.hardware_params.tolist(),
            "flops": [None if np.isnan(x) else float(x) for x in self.flops],
            "weight": self.weight.tolist(),
        }


@dataclass
class ReadReport:
    """What a read saw besides the records: skipped lines by reason, unknown kinds."""

    lines: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    skip_examples: dict[str, tuple[str, int, str, str]] = field(default_factory=dict)
    unknown_kinds: dict[str, int] = field(default_factory=dict)


def _ragged_take(
    offsets: Int64Array, values: np.ndarray, rows: Int64Array
) -> tuple[Int64Array, np.ndarray]:
    """Rows ``rows`` of a ragged array given by (offsets, values): new offsets and values."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    new_offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    gather = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(
        new_offsets[-1], dtype=np.int64
    )
    return new_offsets, values[gather]


@dataclass
class RecordSet:
    """Measured schedules as columns. Row ``i`` of every per-record column is record ``i``.

    Per-record columns (length N): ``task`` int32 (row of ``tasks``), ``target`` int32 (index
    into ``targets``), ``error`` int32 (0 = measured; Ansor's MeasureErrorNo otherwise, 8 for a
    MetaSchedule failure, -1 for an unmeasured candidate of a pool), ``mean_cost`` float64
    seconds (NaN when unmeasured), ``timestamp`` float64 (NaN where the
    format has none), ``file`` int32 (index into ``files``), ``line`` int64, ``num_steps`` int32
    (tokens before the ``max_len`` cut).
    Ragged columns: the repeat costs of record i are ``costs[cost_offsets[i]:cost_offsets[i+1]]``;
    its tokens are ``token_kinds``/``token_fields`` rows ``token_offsets[i]:token_offsets[i+1]``.
    Padded views: ``kinds`` (N, max_len) int32, ``fields`` (N, max_len, num_fields) float32,
    ``lengths`` (N,) int32.
    """

    columns: dict[str, np.ndarray]
    tasks: TaskTable
    targets: list[str]
    files: list[str]
    vocab: Vocab
    tokenizer: TokenizerConfig
    report: ReadReport = field(default_factory=ReadReport)

    def __len__(self) -> int:
        return int(self.columns["task"].shape[0])

    def __getattr__(self, name: str) -> np.ndarray:
        columns: dict[str, np.ndarray] = self.__dict__.get("columns", {})
        if name in columns:
            return columns[name]
        raise AttributeError(f"RecordSet has no attribute {name!r}")

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_core(cls, raw: dict[str, Any], tokenizer: TokenizerConfig, frozen: bool) -> RecordSet:
        report = ReadReport(
            lines=int(raw["lines"]),
            skipped=dict(raw["skipped"]),
            skip_examples={k: tuple(v) for k, v in raw["skip_examples"].items()},
            unknown_kinds=dict(raw["unknown_kinds"]),
        )
        return cls(
            columns=dict(raw["columns"]),
            tasks=TaskTable.from_lists(raw["tasks"]),
            targets=list(raw["targets"]),
            files=list(raw["files"]),
            vocab=Vocab(list(raw["vocab"]), frozen=frozen),
            tokenizer=tokenizer,
            report=report,
        )

    # -- padded token views ------------------------------------------------------------------
    @property
    def lengths(self) -> IntArray:
        return np.diff(self.columns["token_offsets"]).astype(np.int32)

    def _token_positions(self) -> tuple[Int64Array, Int64Array]:
        offsets = self.columns["token_offsets"]
        lengths = np.diff(offsets)
        rows = np.repeat(np.arange(len(self), dtype=np.int64), lengths)
        cols = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1], lengths)
        return rows, cols

    @property
    def kinds(self) -> IntArray:
        out = np.zeros((len(self), self.tokenizer.max_len), dtype=np.int32)
        out[self._token_positions()] = self.columns["token_kinds"]
        return out

    @property
    def fields(self) -> npt.NDArray[np.float32]:
        shape = (len(self), self.tokenizer.max_len, self.tokenizer.num_fields)
        out = np.zeros(shape, dtype=np.float32)
        out[self._token_positions()] = self.columns["token_fields"]
        return out

    def costs_of(self, i: int) -> FloatArray:
        o = self.columns["cost_offsets"]
        costs: FloatArray = self.columns["costs"][o[i] : o[i + 1]]
        return costs

    def throughput(self) -> FloatArray:
        """TenSet's label: the task's fastest valid mean cost over this record's (0 on error)."""
        ok = self.columns["error"] == 0
        best = np.full(len(self.tasks), np.inf)
        np.minimum.at(best, self.columns["task"][ok], self.columns["mean_cost"][ok])
        out = np.zeros(len(self))
        out[ok] = best[self.columns["task"][ok]] / self.columns["mean_cost"][ok]
        return out

    # -- selection -----------------------------------------------------------------------------
    def select(self, rows: npt.ArrayLike) -> RecordSet:
        """A record set of the given rows (an index array or a boolean mask); tables are shared."""
        index = np.asarray(rows)
        if index.dtype == bool:
            if index.shape != (len(self),):
                raise ValueError(f"mask has shape {index.shape}, expected ({len(self)},)")
            index = np.flatnonzero(index)
        index = index.astype(np.int64)
        if len(index) and (index.min() < -len(self) or index.max() >= len(self)):
            raise IndexError(f"row index out of range for {len(self)} records")
        index = np.where(index < 0, index + len(self), index)
        columns = {name: self.columns[name][index] for name in RECORD_COLUMNS}
        for name, (offsets_name, _) in RAGGED_COLUMNS.items():
            offsets, values = _ragged_take(self.columns[offsets_name], self.columns[name], index)
            columns[offsets_name] = offsets
            columns[name] = values
        return RecordSet(columns, self.tasks, self.targets, self.files, self.vocab, self.tokenizer)

    def filter(
        self,
        *,
        valid: bool | None = None,
        tasks: Iterable[int] | None = None,
        targets: Iterable[int | str] | None = None,
    ) -> RecordSet:
        """Records that are measured (``valid=True``) or failed, of some tasks or targets."""
        mask = np.ones(len(self), dtype=bool)
        if valid is not None:
            mask &= (self.columns["error"] == 0) == valid
        if tasks is not None:
            mask &= np.isin(self.columns["task"], np.fromiter(tasks, dtype=np.int64))
        if targets is not None:
            ids = [t if isinstance(t, int) else self.targets.index(t) for t in targets]
            mask &= np.isin(self.columns["target"], ids)
        return self.select(mask)

    # -- persistence ---------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Writes the columns as raw arrays and the tables as a JSON header (tcl.records.binary)."""
        meta = {
            "format_version": RECORDSET_FORMAT_VERSION,
            "tasks": self.tasks.to_lists(),
            "targets": self.targets,
            "files": self.files,
            "vocab": self.vocab.to_dict(),
            "tokenizer": self.tokenizer.to_dict(),
        }
        write_arrays(path, {"recordset": meta}, self.columns)

    @classmethod
    def load(cls, path: str | Path, *, mmap: bool = False) -> RecordSet:
        """Reads a saved record set; ``mmap=True`` maps the columns instead of reading them."""
        header, columns = read_arrays(path, mmap=mmap)
        meta = header.get("recordset")
        if meta is None:
            raise FormatVersionError(f"{path}: a tcl binary file, but not a record set")
        if meta.get("format_version") != RECORDSET_FORMAT_VERSION:
            raise FormatVersionError(
                f"{path}: record set format {meta.get('format_version')!r}; "
                f"this tcl reads {RECORDSET_FORMAT_VERSION}"
            )
        return cls(
            columns=columns,
            tasks=TaskTable.from_lists(meta["tasks"]),
            targets=list(meta["targets"]),
            files=list(meta["files"]),
            vocab=Vocab.from_dict(meta["vocab"]),
            tokenizer=TokenizerConfig.from_dict(meta["tokenizer"]),
        )


def rows_by_task(task: np.ndarray) -> list[np.ndarray]:
    """Row indices of each task in a ``task`` column: tasks by id, rows in order."""
    task = np.asarray(task)
    if not len(task):
        return []
    order = np.argsort(task, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(task[order])) + 1)


def sample_data_path() -> Path:
    """The bundled sample MetaSchedule database (real measurements: docs/collecting.md,
    *Sample data*)."""
    return Path(str(resources.files("tcl") / "data" / "sample"))


def read_records(
    paths: str | Path | Sequence[str | Path],
    *,
    strict: bool = True,
    num_threads: int = 0,
    tokenizer: TokenizerConfig | None = None,
    vocab: Vocab | Sequence[str] | None = None,
    progress: bool = False,
) -> RecordSet:
    """Parses and tokenizes measured records with the C++ core.

    Parameters
    ----------
    paths : path or list of paths
        Ansor/TenSet logs, MetaSchedule work directories or tuning-record files, directories,
        globs; ``.gz`` files are decompressed as they are read (in bounded pieces).
    strict : bool
        Raise :class:`tcl.errors.RecordError` at the first bad line (file, line, reason, field).
        When False, bad lines are skipped and counted in ``rs.report.skipped``.
    num_threads : int
        Parser threads; 0 uses every core.
    tokenizer : TokenizerConfig, optional
    vocab : Vocab, optional
        The kind vocabulary to tokenize against. A frozen one (a trained model's) maps new kinds to
        ``<unk>``; the default grows.
    progress : bool
        Show a bar of the bytes read on stderr.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    found = find_sources(items)
    return _read(read_sources, found, strict, num_threads, tokenizer, vocab, progress)


RecordInputs = Sequence[tuple[str, str, Buffer, str, Buffer]]


def read_inputs(
    inputs: RecordInputs,
    *,
    strict: bool = True,
    num_threads: int = 0,
    tokenizer: TokenizerConfig | None = None,
    vocab: Vocab | Sequence[str] | None = None,
) -> RecordSet:
    """:func:`read_records` on contents already in memory: (format, name, data,
    workload_name, workload_data) tuples as :meth:`sources.RecordSource.read` gives them."""
    return _read(read_buffers, list(inputs), strict, num_threads, tokenizer, vocab)


def _read(
    read: Callable[..., dict[str, Any]],
    what: list[Any],
    strict: bool,
    num_threads: int,
    tokenizer: TokenizerConfig | None,
    vocab: Vocab | Sequence[str] | None,
    progress: bool = False,
) -> RecordSet:
    """``read(what, kinds, frozen, options)`` (tcl.records.reading) wrapped as a RecordSet."""
    config = tokenizer or TokenizerConfig()
    base = vocab_or_default(vocab)
    options = CoreOptions(
        strict, num_threads, config.max_len, config.num_fields, tuple(config.skip_kinds), progress
    )
    return RecordSet.from_core(
        read(what, list(base.kinds), base.frozen, options), config, base.frozen
    )
