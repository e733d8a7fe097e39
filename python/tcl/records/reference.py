"""The pure-Python twin of the C++ record reader (json module only, one thread).

It exists to check the fast path: on any input both produce the same RecordSet, raise the same
:class:`~tcl.errors.RecordError` (file, line, reason, field) or skip the same lines. It is also
the readable specification of the tokenization (see tcl.records.tokenizer for the rules in words).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tcl import _core
from tcl.errors import RecordError
from tcl.records.recordset import RecordInputs, RecordSet
from tcl.records.reference_tokens import (
    _TARGET_PARAMS,
    MAX_HARDWARE_PARAM,
    MAX_INDEX,
    MS_ERROR_CODE,
    MS_FAILED_SECONDS,
    UNMEASURED,
    _Bad,
    _blank_or_comment,
    _integral,
    _is_num,
    _loads,
    _to_float,
    _Tokens,
)
from tcl.records.sources import ANSOR, Buffer, find_sources
from tcl.records.tokenizer import TokenizerConfig, Vocab, vocab_or_default


def _costs(value: Any, field: str) -> list[float]:
    if not isinstance(value, list):
        raise _Bad("wrong_type", field, "expected an array of costs")
    if not value:
        raise _Bad("out_of_range", field, "empty cost list")
    out = []
    for c in value:
        if not _is_num(c):
            raise _Bad("wrong_type", field, "expected a number")
        f = _to_float(c)
        if not math.isfinite(f) or not f > 0:
            raise _Bad("out_of_range", field, "cost must be finite and > 0")
        out.append(f)
    return out


class _Reader:
    def __init__(self, vocab: Vocab, config: TokenizerConfig, strict: bool) -> None:
        known = set(_core.ansor_step_kinds()) | set(_core.metaschedule_instruction_kinds())
        self.tokens = _Tokens(vocab, config, known, list(_core.ansor_annotation_names()))
        self.vocab, self.config, self.strict = vocab, config, strict
        self.kind_ids = {k: i for i, k in enumerate(vocab.kinds)}
        self.kinds = list(vocab.kinds)
        self.targets: list[str] = []
        self.target_ids: dict[str, int] = {}
        self.tasks: dict[str, list[Any]] = {
            "workload_key": [],
            "format": [],
            "target": [],
            "hardware_params": [],
        }
        self.task_ids: dict[tuple[str, str], int] = {}
        self.rows: dict[str, list[Any]] = {
            k: []
            for k in (
                "task",
                "target",
                "error",
                "mean_cost",
                "timestamp",
                "file",
                "line",
                "num_steps",
            )
        }
        self.costs: list[float] = []
        self.cost_offsets = [0]
        self.token_kinds: list[int] = []
        self.token_fields: list[list[float]] = []
        self.token_offsets = [0]
        self.skipped: dict[str, int] = {}
        self.examples: dict[str, tuple[str, int, str, str]] = {}
        self.unknown: dict[str, int] = {}
        self.lines = 0

    def problem(self, file: str, line: int, bad: _Bad) -> None:
        if self.strict:
            raise RecordError.at(file, line, bad.reason, bad.field, bad.detail)
        if bad.reason not in self.skipped:
            self.skipped[bad.reason] = 0
            self.examples[bad.reason] = (file, line, bad.field, bad.detail)
        self.skipped[bad.reason] += 1

    def task(self, fmt: str, key: str, target: str, hardware: list[int]) -> int:
        if (key, target) not in self.task_ids:
            if target not in self.target_ids:
                self.target_ids[target] = len(self.targets)
                self.targets.append(target)
            self.task_ids[(key, target)] = len(self.tasks["workload_key"])
            for name, value in (
                ("workload_key", key),
                ("format", fmt),
                ("target", self.target_ids[target]),
                ("hardware_params", hardware),
            ):
                self.tasks[name].append(value)
        return self.task_ids[(key, target)]

    def append(
        self, file: int, line: int, task: int, error: int, costs: list[float], ts: float
    ) -> None:
        t = self.tokens
        for kind in t.kinds:
            if kind is not None and kind not in self.kind_ids:
                self.kind_ids[kind] = len(self.kinds)
                self.kinds.append(kind)
            self.token_kinds.append(1 if kind is None else self.kind_ids[kind])
        for name, n in t.unknown.items():
            self.unknown[name] = self.unknown.get(name, 0) + n
        self.token_fields.extend(t.fields)
        self.token_offsets.append(len(self.token_kinds))
        total = 0.0
        for c in costs:
            total += c
        mean = total / len(costs) if costs else math.nan
        for name, value in (
            ("task", task),
            ("target", self.tasks["target"][task]),
            ("error", error),
            ("mean_cost", mean),
            ("timestamp", ts),
            ("file", file),
            ("line", line),
            ("num_steps", t.steps),
        ):
            self.rows[name].append(value)
        self.costs.extend(costs)
        self.cost_offsets.append(len(self.costs))

    def ansor(self, r: Any, file: int, line: int) -> None:
        if not isinstance(r, dict):
            raise _Bad("wrong_type", "record", "expected an object")
        if "i" not in r:
            raise _Bad("missing_field", "i", 'record has no "i"')
        i = r["i"]
        if not isinstance(i, list) or len(i) < 2:
            raise _Bad("wrong_type", "i", "expected [task, state]")
        task = i[0]
        if not isinstance(task, list) or len(task) < 2:
            raise _Bad("wrong_type", "i[0]", "expected [workload_key, target, ...]")
        if not isinstance(task[0], str):
            raise _Bad("wrong_type", "i[0][0]", "expected a workload key string")
        if not isinstance(task[1], str):
            raise _Bad("wrong_type", "i[0][1]", "expected a target string")
        hardware = [0] * 8
        if len(task) >= 3:
            hw = task[2]
            if isinstance(hw, list):
                if len(hw) > 8:
                    raise _Bad("out_of_range", "i[0][2]", "more than 8 hardware parameters")
                for k, x in enumerate(hw):
                    if not _is_num(x):
                        raise _Bad("wrong_type", "i[0][2]", "expected a number")
                    if not _integral(x, -MAX_HARDWARE_PARAM, MAX_HARDWARE_PARAM):
                        raise _Bad(
                            "out_of_range", "i[0][2]", "hardware parameter must be an integer"
                        )
                    hardware[k] = int(_to_float(x))
            elif hw is not None:
                raise _Bad("wrong_type", "i[0][2]", "expected an array of hardware parameters")
        state = i[1]
        if not isinstance(state, list) or len(state) < 2:
            raise _Bad("wrong_type", "i[1]", "expected [stages, steps]")
        steps = state[1]
        if not isinstance(steps, list):
            raise _Bad("wrong_type", "i[1][1]", "expected an array of steps")
        if "r" not in r:
            raise _Bad("missing_field", "r", 'record has no "r"')
        res = r["r"]
        if not isinstance(res, list) or len(res) < 2:
            raise _Bad("wrong_type", "r", "expected [costs, error_no, all_cost, timestamp]")
        costs = _costs(res[0], "r[0]")
        if not _is_num(res[1]):
            raise _Bad("wrong_type", "r[1]", "expected an error code")
        if not _integral(res[1], 0, MAX_INDEX):
            raise _Bad("out_of_range", "r[1]", "error code must be a small non-negative integer")
        ts = math.nan
        if len(res) >= 4:
            if not _is_num(res[3]):
                raise _Bad("wrong_type", "r[3]", "expected a timestamp")
            ts = _to_float(res[3])
            if not math.isfinite(ts):
                raise _Bad("out_of_range", "r[3]", "timestamp is not finite")
        self.tokens.begin()
        for k, step in enumerate(steps):
            self.tokens.ansor_step(step, f"i[1][1][{k}]")
        task_id = self.task(ANSOR, task[0], task[1], hardware)
        self.append(file, line, task_id, int(res[1]), costs, ts)

    def metaschedule(
        self, r: Any, workloads: list[str | None], wname: str, file: int, line: int
    ) -> None:
        if not isinstance(r, list) or len(r) != 2:
            raise _Bad(
                "wrong_type",
                "record",
                "expected [workload_index, [trace, run_secs, target, args_info]]",
            )
        if not _is_num(r[0]):
            raise _Bad("wrong_type", "workload_index", "expected a number")
        if not _integral(r[0], 0, MAX_INDEX):
            raise _Bad("out_of_range", "workload_index", "not a valid index")
        w = int(r[0])
        if w >= len(workloads) or workloads[w] is None:
            raise _Bad("unknown_workload", "workload_index", f"workload {w} is not in {wname}")
        body = r[1]
        if not isinstance(body, list) or len(body) < 3:
            raise _Bad("wrong_type", "record[1]", "expected [trace, run_secs, target, args_info]")
        trace, run_secs, target = body[0], body[1], body[2]
        costs = [] if run_secs is None else _costs(run_secs, "run_secs")
        if not isinstance(target, dict):
            raise _Bad("wrong_type", "target", "expected a target object")
        insts, decision_of = _trace(trace)
        self.tokens.begin()
        for k, inst in enumerate(insts):
            self.tokens.ms_instruction(inst, decision_of.get(k), k in decision_of, f"trace[0][{k}]")
        hardware = _target_hardware(target)
        error = UNMEASURED if run_secs is None else 0
        if any(c >= MS_FAILED_SECONDS for c in costs):
            error = MS_ERROR_CODE
        text = json.dumps(target, separators=(",", ":"), ensure_ascii=False)
        task_id = self.task("metaschedule", workloads[w] or "", text, hardware)
        self.append(file, line, task_id, error, costs, math.nan)

    def workloads(self, name: str, data: Buffer) -> list[str | None]:
        keys: list[str | None] = []
        for line_no, line in enumerate(bytes(data).split(b"\n"), start=1):
            if _blank_or_comment(line):
                continue
            try:
                w = _loads(line)
                if not (isinstance(w, list) and w and isinstance(w[0], str)):
                    raise _Bad("wrong_type", "workload", "expected [structural_hash, module]")
                keys.append(w[0])
            except _Bad as bad:
                self.problem(name, line_no, bad)
                keys.append(None)
        return keys


def read_records_reference(
    paths: str | Path | Sequence[str | Path],
    *,
    strict: bool = True,
    tokenizer: TokenizerConfig | None = None,
    vocab: Vocab | Sequence[str] | None = None,
) -> RecordSet:
    """Same contract as :func:`tcl.read_records`, in pure Python."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    inputs = [s.read() for s in find_sources(items)]
    return read_inputs_reference(inputs, strict=strict, tokenizer=tokenizer, vocab=vocab)


def read_inputs_reference(
    inputs: RecordInputs,
    *,
    strict: bool = True,
    tokenizer: TokenizerConfig | None = None,
    vocab: Vocab | Sequence[str] | None = None,
) -> RecordSet:
    """Same contract as :func:`tcl.records.recordset.read_inputs`, in pure Python."""
    config = tokenizer or TokenizerConfig()
    base = vocab_or_default(vocab)
    reader = _Reader(base, config, strict)
    workloads = [reader.workloads(i[3], i[4]) if i[0] != ANSOR else [] for i in inputs]
    for file_index, (fmt, name, data, wname, _) in enumerate(inputs):
        lines = bytes(data).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        reader.lines += len(lines)
        for line_no, line in enumerate(lines, start=1):
            if _blank_or_comment(line):
                continue
            try:
                record = _loads(line)
                if fmt == ANSOR:
                    reader.ansor(record, file_index, line_no)
                else:
                    reader.metaschedule(record, workloads[file_index], wname, file_index, line_no)
            except _Bad as bad:
                reader.problem(name, line_no, bad)
    raw = _core_result(reader, config.num_fields, [i[1] for i in inputs])
    return RecordSet.from_core(raw, config, base.frozen)


def _trace(trace: Any) -> tuple[list[Any], dict[int, Any]]:
    """A MetaSchedule trace's instructions and each decided instruction's decision, checked."""
    if not isinstance(trace, list) or len(trace) != 2:
        raise _Bad("wrong_type", "trace", "expected [instructions, decisions]")
    insts, decisions = trace
    if not isinstance(insts, list):
        raise _Bad("wrong_type", "trace[0]", "expected an array of instructions")
    if not isinstance(decisions, list):
        raise _Bad("wrong_type", "trace[1]", "expected an array of decisions")
    for k, inst in enumerate(insts):
        if not (
            isinstance(inst, list)
            and len(inst) == 4
            and isinstance(inst[0], str)
            and all(isinstance(x, list) for x in inst[1:])
        ):
            raise _Bad("wrong_type", f"trace[0][{k}]", "expected [kind, inputs, attrs, outputs]")
    decision_of: dict[int, Any] = {}
    for k, d in enumerate(decisions):
        if not (isinstance(d, list) and len(d) == 2 and _is_num(d[0])):
            raise _Bad("wrong_type", f"trace[1][{k}]", "expected [instruction_index, decision]")
        if not _integral(d[0], 0, len(insts) - 1):
            raise _Bad("out_of_range", f"trace[1][{k}]", "instruction index is not in the trace")
        decision_of[int(d[0])] = d[1]
    return insts, decision_of


def _target_hardware(target: dict[str, Any]) -> list[int]:
    """The hardware parameters a target object states (the rest 0), as the C++ core reads them."""
    hardware = [0] * 8
    for name, slot in _TARGET_PARAMS:
        value = target.get(name)
        if isinstance(value, (int, float)) and _is_num(value) and _integral(value, 0, MAX_INDEX):
            hardware[slot] = int(_to_float(value))
    return hardware


# The dtypes of the core's per-record columns, in _Reader.rows's order.
_ROW_DTYPES = (np.int32, np.int32, np.int32, np.float64, np.float64, np.int32, np.int64, np.int32)


def _core_result(reader: _Reader, width: int, files: list[str]) -> dict[str, Any]:
    """What the reader gathered, in the C++ core's result layout (RecordSet.from_core)."""
    return {
        "columns": {
            **{
                k: np.asarray(v, dtype=dt)
                for (k, v), dt in zip(
                    reader.rows.items(),
                    _ROW_DTYPES,
                    strict=True,
                )
            },
            "cost_offsets": np.asarray(reader.cost_offsets, dtype=np.int64),
            "costs": np.asarray(reader.costs, dtype=np.float64),
            "token_offsets": np.asarray(reader.token_offsets, dtype=np.int64),
            "token_kinds": np.asarray(reader.token_kinds, dtype=np.int32),
            "token_fields": np.asarray(reader.token_fields, dtype=np.float32).reshape(-1, width),
        },
        "tasks": reader.tasks,
        "targets": reader.targets,
        "files": files,
        "vocab": reader.kinds,
        "skipped": reader.skipped,
        "skip_examples": reader.examples,
        "unknown_kinds": dict(sorted(reader.unknown.items())),
        "lines": reader.lines,
    }
