"""Seed inputs shared by both fuzzers (bench/fuzz.sh, bench/fuzz_differential.py).

An input is one byte saying the format and then the file: ``0x00`` + an Ansor log, or ``0x01`` +
a MetaSchedule workload file, ``0x1E``, tuning records. Seeds are records (tcl's own Ansor-format
logs, the real Ansor logs in TCL_ANSOR_DIR when set, the bundled MetaSchedule sample) and the
hostile shapes tcl is known
to meet: wrong types in steps, surrogate escapes, costs that are zero or underflow, deep nesting,
CRLF endings, invalid UTF-8.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tcl.records.synthetic import LAYOUT, ansor_lines

ROOT = Path(__file__).resolve().parent.parent
_GOOD = json.dumps(
    {
        "i": [
            ['["abc", 1, 8, 8, 16]', "llvm -keys=cpu", [2, 64, 64, 0, 0, 0, 0, 0], "", 0],
            [
                [],
                [
                    ["SP", 2, 0, 64, [4, 8], 1],
                    ["AN", 2, 0, 3],
                    ["PR", 2, 0, "auto_unroll_max_step$16"],
                    ["CHR", 2, "shared", [3]],
                ],
            ],
        ],
        "r": [[0.25, 0.5], 0, 0.5, 1700000000],
    }
)
_HOSTILE = [
    ('["SP", 2, 0', '["SP", 2, "x"'),  # a string where a number belongs
    ("[4, 8]", '[4, "8"]'),
    ("[4, 8]", "[4, null]"),
    ('"auto_unroll_max_step$16"', "16"),
    ('["AN", 2, 0, 3]', '["AN", 2, 0]'),  # an argument missing
    ('"shared"', "7"),
    ("abc", "a\\ud800bc"),  # lone surrogates
    ("llvm", "\\udfffllvm"),
    ('"AN"', '"A\\udbffN"'),
    ("[0.25, 0.5]", "[-0.0]"),  # costs that give no throughput
    ("[0.25, 0.5]", "[1e-400]"),
    ("[0.25, 0.5]", "[0.25, 0]"),
    ("[0.25, 0.5]", "[1e999]"),
    ("[4, 8]", "[4, 1" + "0" * 400 + "]"),
    ("0.5], 0, 0.5", "0.5], 99999999999999999999999, 0.5"),
]


def hostile_ansor_logs() -> list[bytes]:
    """Small logs, each a good record, a hostile one and a good one again."""
    good = _GOOD.encode()
    logs = [good + b"\r\n" + good + b"\r\n", b"[" * 300 + b"]" * 300, good + b"\n\xff\xfe\x00"]
    for old, new in _HOSTILE:
        assert old in _GOOD, old
        logs.append(good + b"\n" + _GOOD.replace(old, new).encode() + b"\n" + good + b"\n")
    return logs


def seeds(lines_per_file: int) -> list[bytes]:
    """Every seed: real records (``lines_per_file`` per file) and the hostile shapes."""
    found = []
    ansor = Path(os.environ.get("TCL_ANSOR_DIR") or "/nonexistent")
    for path in sorted(ansor.glob("*.json")) if ansor.is_dir() else []:
        found += [b"\x00" + line for line in path.read_bytes().splitlines()[:lines_per_file]]
    for name in LAYOUT:  # tcl's own Ansor-format logs: every step kind, both key styles
        lines = ansor_lines(name)[:lines_per_file]
        found += [b"\x00" + line.encode() for line in lines]
    sample = ROOT / "python" / "tcl" / "data" / "sample"
    workload = (sample / "database_workload.json").read_bytes().splitlines()[0]
    for line in (sample / "database_tuning_record.json").read_bytes().splitlines()[:lines_per_file]:
        found.append(b"\x01" + workload + b"\n\x1e" + line)
    found.append(
        b"\x01" + workload + b"\n\x1e" + b'[0, [[["GetSBlock", [], ["\\ud800"], []]], []]]'
    )
    found += [b"\x00" + log for log in hostile_ansor_logs()]
    return found
