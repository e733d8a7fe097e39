"""Differential fuzzing with atheris: the C++ reader and its pure-Python twin must agree.

Each input is read by both in lenient mode (and in strict mode: same error file, line, reason
and field); any difference in records, tables or skip counts is a failure. The Python twin is
coverage-instrumented, so atheris steers towards new validation paths.

Usage: python bench/fuzz_differential.py [-runs=N] [-max_total_time=S] [CORPUS_DIR ...]
Seeds: bench/fuzz_seeds.py (real records and hostile shapes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import atheris
import numpy as np
from fuzz_seeds import seeds

from tcl.errors import RecordError
from tcl.records import RecordSet, read_inputs, reference, reference_tokens
from tcl.records.tokenizer import TokenizerConfig

ROOT = Path(__file__).resolve().parent.parent
CONFIG = TokenizerConfig(max_len=12, num_fields=4)


def _inputs(data: bytes) -> list[tuple[str, str, bytes, str, bytes]]:
    if data[:1] == b"\x01":  # MetaSchedule: workload file, 0x1E, tuning records
        workloads, _, records = data[1:].partition(b"\x1e")
        return [("metaschedule", "records", records, "workloads", workloads)]
    return [("ansor", "log", data[1:], "", b"")]


def _same(a: RecordSet, b: RecordSet) -> bool:
    return (
        all(
            np.array_equal(a.columns[k], b.columns[k], equal_nan=a.columns[k].dtype.kind == "f")
            for k in a.columns
        )
        and a.tasks.to_lists() == b.tasks.to_lists()
        and a.targets == b.targets
        and a.vocab == b.vocab
        and a.report.skipped == b.report.skipped
        and a.report.unknown_kinds == b.report.unknown_kinds
    )


def _strict(read: object, inputs: list[tuple[str, str, bytes, str, bytes]]) -> object:
    try:
        read(inputs, tokenizer=CONFIG)  # type: ignore[operator]
    except RecordError as err:
        return (err.file, err.line, err.reason, err.field)
    return None


def test_one_input(data: bytes) -> None:
    inputs = _inputs(data)
    fast = read_inputs(inputs, strict=False, num_threads=1, tokenizer=CONFIG)
    slow = reference.read_inputs_reference(inputs, strict=False, tokenizer=CONFIG)
    if not _same(fast, slow):
        raise AssertionError(f"readers disagree on {data!r}")
    if _strict(read_inputs, inputs) != _strict(reference.read_inputs_reference, inputs):
        raise AssertionError(f"strict errors differ on {data!r}")


def seed_corpus(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i, seed in enumerate(seeds(lines_per_file=4)):
        (directory / f"seed{i}").write_bytes(seed)


def main() -> None:
    args = sys.argv[1:]
    if not any(not a.startswith("-") for a in args):
        args.append(str(ROOT / "build" / "fuzz_differential_corpus"))
    for corpus in (a for a in args if not a.startswith("-")):
        seed_corpus(Path(corpus))
    atheris.instrument_func(reference._Reader.ansor)
    for func in (
        reference._Reader.metaschedule,
        reference._Reader.workloads,
        reference_tokens._Tokens.ansor_step,
        reference_tokens._Tokens.ms_instruction,
        reference_tokens._Tokens._walk,
        reference_tokens._Tokens._string,
        reference_tokens._check_step_arguments,
        reference._costs,
        reference_tokens._loads,
    ):
        atheris.instrument_func(func)
    atheris.Setup([sys.argv[0], *args], test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
