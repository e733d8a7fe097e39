"""A batch of programs' traces as JSON text, written by MetaSchedule's own record writer.

tcl's model reads a program as the JSON of its trace, the text a MetaSchedule record holds.
Asked from Python, TVM hands a trace's JSON over element by element through its FFI
(``Trace.as_json`` converts every nested array and immediate to a Python object), which was
most of what scoring a program with tcl's model cost. So a batch's traces are committed to a
throwaway ``JSONDatabase`` and its lines read back: C++ writes the text as it writes every
record of a tuning log. On one core of a Zen 3 that is 0.17 ms a program instead of 0.97 on
BERT-tiny's tasks, 0.36 instead of 1.90 on ResNet-50's (``bench/bench_scoring.py``); where no
temporary folder can be written, the traces are converted in Python as before.

The text differs from Python's ``json.dumps`` of the same trace only in how it writes
booleans (``1`` and ``0`` where Python writes ``true`` and ``false``), which tcl's tokenizer
reads as the same numbers. :func:`reference_texts` (``measure.text_of_trace`` of each) is the
reference twin: tests/integrations/tvm/test_trace_texts.py checks that both give the same JSON
and the same tokens.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import tvm
from tvm.s_tir import meta_schedule as ms

from tcl.integrations.tvm.measure import text_of_trace

# A record line as JSONDatabase writes one whose workload is its first and that has no run
# seconds, target or argument info: the trace's JSON between these.
_LINE_START = "[0,["
_LINE_END = ",null,null,null]]"


def trace_texts(candidates: list[Any]) -> list[str]:
    """The JSON text of each candidate's trace (decisions and postprocessing included), in
    order, as MetaSchedule's record writer writes it."""
    if not candidates:
        return []
    try:
        lines = _written(candidates)
    except OSError:  # no temporary folder to write in
        return reference_texts(candidates)
    if len(lines) != len(candidates):
        raise RuntimeError(
            f"MetaSchedule's record writer wrote {len(lines)} lines for {len(candidates)} traces"
        )
    return [_trace_of(line, candidate) for line, candidate in zip(lines, candidates, strict=True)]


def _written(candidates: list[Any]) -> list[str]:
    """The record lines a throwaway ``JSONDatabase`` writes for the candidates' traces."""
    with tempfile.TemporaryDirectory(prefix="tcl-traces-") as folder:
        records = Path(folder) / "records.json"
        database = ms.database.JSONDatabase(
            path_workload=str(Path(folder) / "workloads.json"),
            path_tuning_record=str(records),
            allow_missing=True,
        )
        # the workload only numbers the lines (0); an empty module costs nothing to write
        workload = database.commit_workload(tvm.IRModule())
        for candidate in candidates:
            database.commit_tuning_record(ms.database.TuningRecord(candidate.sch.trace, workload))
        return records.read_text().splitlines()


def reference_texts(candidates: list[Any]) -> list[str]:
    """:func:`trace_texts`' reference twin: each trace converted from TVM's lists in Python."""
    return [text_of_trace(candidate.sch.trace) for candidate in candidates]


def _trace_of(line: str, candidate: Any) -> str:
    """The trace's JSON in a record ``line``; the reference twin's text where the line is not
    of the form this module reads (a TVM that writes records otherwise)."""
    if line.startswith(_LINE_START) and line.endswith(_LINE_END):
        return line[len(_LINE_START) : -len(_LINE_END)]
    return text_of_trace(candidate.sch.trace)


__all__ = ["reference_texts", "trace_texts"]
