"""Bad input: a clear RecordError in strict mode, a counted skip in lenient mode, never a crash;
and the C++ reader and its Python twin agree on every case."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.records.reference import read_records_reference

from conftest import assert_same_records

GOOD = json.dumps(
    {
        "i": [
            ['["abc", 1, 8, 8, 16]', "llvm -keys=cpu", [2, 64, 64, 0, 0, 0, 0, 0], "", 0],
            [
                [],
                [
                    ["SP", 2, 0, 64, [4, 8], 1],
                    ["AN", 2, 0, 3],
                    ["PR", 2, 0, "auto_unroll_max_step$16"],
                ],
            ],
        ],
        "r": [[0.25, 0.5], 0, 0.5, 1700000000],
        "v": "v0.6",
    }
)

# More values than one line may hold (cpp/json_reader.h kMaxJsonValues): well-formed JSON, but
# its parse would take 20x its size in memory.
TOO_MANY_VALUES = GOOD[:-1] + ', "x": [' + "0," * (1 << 20) + "0]}"

# (name, bad line, reason, field)
CASES = [
    ("more than 2^20 values", TOO_MANY_VALUES, "too_large", ""),
    # Found by the differential fuzzer: json drops the first of two duplicate keys, the C++
    # reader still parses (and rejects) it.
    (
        "lone surrogate in a value a duplicate key replaces",
        GOOD[:-1] + ', "v": "\\ud800", "v": "v0.6"}',
        "invalid_json",
        "",
    ),
    ("truncated line", GOOD[: len(GOOD) // 2], "invalid_json", ""),
    ("binary garbage", "\x00\xff\xfe garbage \x01", "invalid_json", ""),
    ("invalid utf-8", GOOD.replace("llvm", "ll\udcffvm"), "invalid_json", ""),
    ("NaN literal", GOOD.replace("0.5", "NaN"), "invalid_json", ""),
    ("deep nesting", "[" * 500 + "]" * 500, "invalid_json", ""),
    ("not an object", "[1, 2, 3]", "wrong_type", "record"),
    ("no input", json.dumps({"r": [[1.0], 0, 0, 0]}), "missing_field", "i"),
    ("no result", GOOD.replace('"r"', '"x"'), "missing_field", "r"),
    ("key not a string", GOOD.replace('"[\\"abc\\", 1, 8, 8, 16]"', "42"), "wrong_type", "i[0][0]"),
    ("target not a string", GOOD.replace('"llvm -keys=cpu"', "null"), "wrong_type", "i[0][1]"),
    (
        "hardware not a list",
        GOOD.replace("[2, 64, 64, 0, 0, 0, 0, 0]", '"x"'),
        "wrong_type",
        "i[0][2]",
    ),
    (
        "huge hardware param",
        GOOD.replace("[2, 64, 64,", "[1e300, 64, 64,"),
        "out_of_range",
        "i[0][2]",
    ),
    (
        "steps not a list",
        GOOD.replace('[[], [["SP"', '[[], {"a": [["SP"').replace("]]]],", "]]}]],"),
        "wrong_type",
        "i[1][1]",
    ),
    ("step kind not a string", GOOD.replace('["AN", 2', "[7, 2"), "wrong_type", "i[1][1][1]"),
    (
        "a string where a step takes a number",
        GOOD.replace('["SP", 2, 0', '["SP", 2, "x"'),
        "wrong_type",
        "i[1][1][0][2]",
    ),
    (
        "split lengths holding a string",
        GOOD.replace("[4, 8]", '[4, "8"]'),
        "wrong_type",
        "i[1][1][0][4]",
    ),
    ("split lengths not an array", GOOD.replace("[4, 8]", "4"), "wrong_type", "i[1][1][0][4]"),
    (
        "pragma without its string",
        GOOD.replace('"auto_unroll_max_step$16"', "16"),
        "wrong_type",
        "i[1][1][2][3]",
    ),
    (
        "step missing an argument",
        GOOD.replace('["AN", 2, 0, 3]', '["AN", 2, 0]'),
        "wrong_type",
        "i[1][1][1][3]",
    ),
    ("costs not numbers", GOOD.replace("[0.25, 0.5]", '["fast"]'), "wrong_type", "r[0]"),
    ("empty costs", GOOD.replace("[0.25, 0.5]", "[]"), "out_of_range", "r[0]"),
    ("negative cost", GOOD.replace("[0.25, 0.5]", "[-1]"), "out_of_range", "r[0]"),
    ("zero cost", GOOD.replace("[0.25, 0.5]", "[0.25, 0]"), "out_of_range", "r[0]"),
    ("negative zero cost", GOOD.replace("[0.25, 0.5]", "[-0.0]"), "out_of_range", "r[0]"),
    ("underflowing cost", GOOD.replace("[0.25, 0.5]", "[1e-400]"), "out_of_range", "r[0]"),
    ("lone surrogate in the key", GOOD.replace("abc", "a\\ud800bc"), "invalid_json", ""),
    ("lone surrogate in the target", GOOD.replace("llvm", "\\udfffllvm"), "invalid_json", ""),
    ("lone surrogate in a step", GOOD.replace('"AN"', '"A\\udbffN"'), "invalid_json", ""),
    ("infinite cost", GOOD.replace("[0.25, 0.5]", "[1e999]"), "out_of_range", "r[0]"),
    (
        "overflowing cost with a negative exponent",
        GOOD.replace("[0.25, 0.5]", "[1" + "0" * 540 + ".5e-6]"),
        "out_of_range",
        "r[0]",
    ),
    ("error code a float", GOOD.replace("0.5], 0, 0.5", "0.5], 0.5, 0.5"), "out_of_range", "r[1]"),
    (
        "huge error code",
        GOOD.replace("0.5], 0, 0.5", "0.5], 99999999999999999999999, 0.5"),
        "out_of_range",
        "r[1]",
    ),
    ("timestamp a string", GOOD.replace("1700000000", '"now"'), "wrong_type", "r[3]"),
    (
        "huge number in a step",
        GOOD.replace("[4, 8]", "[4, 1" + "0" * 400 + "]"),
        "out_of_range",
        "i[1][1][0]",
    ),
]


@pytest.mark.parametrize(("name", "line", "reason", "field"), CASES, ids=[c[0] for c in CASES])
def test_bad_line_strict_and_lenient(
    tmp_path: Path, name: str, line: str, reason: str, field: str
) -> None:
    path = tmp_path / "log.json"
    path.write_bytes((GOOD + "\n" + line + "\n" + GOOD + "\n").encode("utf-8", "surrogateescape"))
    for read in (tcl.read_records, read_records_reference):
        with pytest.raises(tcl.RecordError) as info:
            read(path)
        err = info.value
        assert (err.file, err.line, err.reason, err.field) == (str(path), 2, reason, field)
        assert str(path) in str(err) and ":2:" in str(err) and reason in str(err)
    lenient = tcl.read_records(path, strict=False)
    assert len(lenient) == 2
    assert lenient.report.skipped == {reason: 1}
    assert lenient.report.skip_examples[reason][:3] == (str(path), 2, field)
    assert_same_records(lenient, read_records_reference(path, strict=False))


def test_empty_and_comment_only_files(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_bytes(b"")
    (tmp_path / "comments.json").write_text("# nothing\n\n   \n# here\n")
    rs = tcl.read_records(tmp_path)
    assert len(rs) == 0 and rs.report.skipped == {} and rs.report.lines == 4
    assert rs.kinds.shape == (0, rs.tokenizer.max_len)
    assert_same_records(rs, read_records_reference(tmp_path))


def test_unknown_step_kind_is_counted_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "log.json"
    path.write_text(GOOD.replace('["AN", 2, 0, 3]', '["XYZ", 2, 0, 3]') + "\n")
    rs = tcl.read_records(path)
    assert len(rs) == 1
    assert rs.kinds[0, 1] == 1  # <unk>
    assert rs.report.unknown_kinds == {"XYZ": 1}
    assert "XYZ" not in rs.vocab.kinds
    assert_same_records(rs, read_records_reference(path))


def test_error_line_numbers_span_chunks(tmp_path: Path) -> None:
    # Far past one chunk, so the bad line sits in a later chunk than the first.
    lines = [GOOD] * 30000
    lines[27345] = GOOD[:-5]
    path = tmp_path / "big.json"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(tcl.RecordError) as info:
        tcl.read_records(path, num_threads=2)
    assert info.value.line == 27346
    rs = tcl.read_records(path, strict=False, num_threads=2)
    assert len(rs) == 29999 and rs.report.skip_examples["invalid_json"][1] == 27346


def _ms_lines(workload_index: int = 0) -> str:
    trace = [
        [
            ["SamplePerfectTile", ["l0"], [2, 64], ["v1", "v2"]],
            ["Split", ["l0", "v1", "v2"], [1, 0], ["l3", "l4"]],
            ["SampleCategorical", [], [[0, 16, 64], [0.5, 0.25, 0.25]], ["v5"]],
            ["Annotate", ["b0", "v5"], ["meta_schedule.unroll_explicit"], []],
        ],
        [[0, [8, 8]], [2, 1]],
    ]
    return json.dumps([workload_index, [trace, [1e-5, 2e-5], {"kind": "llvm", "num-cores": 2}, []]])


def _write_db(directory: Path, records: list[str], workloads: list[str] | None = None) -> Path:
    directory.mkdir(exist_ok=True)
    (directory / "database_workload.json").write_text(
        "\n".join(workloads or ['["123", "AAAA"]']) + "\n"
    )
    (directory / "database_tuning_record.json").write_text("\n".join(records) + "\n")
    return directory


def test_metaschedule_synthetic_tokens(tmp_path: Path) -> None:
    rs = tcl.read_records(_write_db(tmp_path / "db", [_ms_lines()]))
    assert len(rs) == 1 and rs.tasks.workload_key == ["123"] and rs.tasks.format == ["metaschedule"]
    assert rs.targets == ['{"kind":"llvm","num-cores":2}']
    assert rs.tasks.hardware_params[0, 0] == 2
    kinds = [rs.vocab.kinds[i] for i in rs.kinds[0, : rs.lengths[0]]]
    assert kinds == [
        "SamplePerfectTile",
        "Split",
        "SampleCategorical",
        "Annotate:meta_schedule.unroll_explicit",
    ]
    f = rs.fields[0]
    # The tile decision comes first, then the literal attrs; the categorical decision (index 1)
    # resolves to its candidate, 16.
    assert f[0, :4].tolist() == pytest.approx(np.log2(1 + np.array([8, 8, 2, 64])).tolist())
    assert f[2, 0] == pytest.approx(4.087462841250339)  # log2(17)
    assert_same_records(rs, read_records_reference(tmp_path / "db"))


def test_unmeasured_pool_records(tmp_path: Path) -> None:
    line = _ms_lines().replace("[1e-05, 2e-05]", "null")
    rs = tcl.read_records(_write_db(tmp_path / "db", [_ms_lines(), line]))
    assert rs.columns["error"].tolist() == [0, -1]
    assert np.isnan(rs.columns["mean_cost"][1]) and len(rs.costs_of(1)) == 0
    assert rs.lengths.tolist() == [4, 4]
    assert rs.throughput()[1] == 0.0
    assert_same_records(rs, read_records_reference(tmp_path / "db"))


MS_CASES = [
    ("not a pair", "[1, 2, 3]", "wrong_type", "record"),
    (
        "index a string",
        _ms_lines().replace("[0, [[[", '["0", [[[', 1),
        "wrong_type",
        "workload_index",
    ),
    (
        "negative index",
        _ms_lines().replace("[0, [[[", "[-1, [[[", 1),
        "out_of_range",
        "workload_index",
    ),
    ("unknown workload", _ms_lines(5), "unknown_workload", "workload_index"),
    ("run_secs empty", _ms_lines().replace("[1e-05, 2e-05]", "[]"), "out_of_range", "run_secs"),
    (
        "target a string",
        _ms_lines().replace('{"kind": "llvm", "num-cores": 2}', '"llvm"'),
        "wrong_type",
        "target",
    ),
    (
        "instruction too short",
        _ms_lines().replace('["Split", ["l0", "v1", "v2"], [1, 0], ["l3", "l4"]]', '["Split"]'),
        "wrong_type",
        "trace[0][1]",
    ),
    (
        "decision index past the trace",
        _ms_lines().replace("[2, 1]]", "[9, 1]]"),
        "out_of_range",
        "trace[1][1]",
    ),
    (
        "huge number in an attr",
        _ms_lines().replace("[2, 64]", "[2, 1e999]"),
        "out_of_range",
        "trace[0][0]",
    ),
]


@pytest.mark.parametrize(
    ("name", "line", "reason", "field"), MS_CASES, ids=[c[0] for c in MS_CASES]
)
def test_bad_metaschedule_record(
    tmp_path: Path, name: str, line: str, reason: str, field: str
) -> None:
    db = _write_db(tmp_path / "db", [_ms_lines(), line])
    for read in (tcl.read_records, read_records_reference):
        with pytest.raises(tcl.RecordError) as info:
            read(db)
        assert (info.value.line, info.value.reason, info.value.field) == (2, reason, field)
        assert info.value.file.endswith("database_tuning_record.json")
    lenient = tcl.read_records(db, strict=False)
    assert len(lenient) == 1 and lenient.report.skipped == {reason: 1}
    assert_same_records(lenient, read_records_reference(db, strict=False))


def test_bad_workload_line(tmp_path: Path) -> None:
    db = _write_db(tmp_path / "db", [_ms_lines(0), _ms_lines(1)], ['["123", "AAAA"]', "{not json"])
    with pytest.raises(tcl.RecordError) as info:
        tcl.read_records(db)
    assert info.value.file.endswith("database_workload.json") and info.value.line == 2
    rs = tcl.read_records(db, strict=False)
    assert len(rs) == 1 and rs.report.skipped == {"invalid_json": 1, "unknown_workload": 1}
    assert_same_records(rs, read_records_reference(db, strict=False))


def _mutations(line: bytes, rng: random.Random, n: int) -> list[bytes]:
    out = []
    alphabet = b'[]{}",:0123456789-.eE \\ntrufalsSPAN$\x00\xff'
    for _ in range(n):
        b = bytearray(line)
        for _ in range(rng.randint(1, 4)):
            op = rng.random()
            pos = rng.randrange(len(b) + 1)
            if op < 0.4 and len(b) > 1:
                del b[pos % len(b) : pos % len(b) + rng.randint(1, 8)]
            elif op < 0.8:
                b[pos:pos] = bytes([rng.choice(alphabet)])
            else:
                b = b[:pos]
        out.append(bytes(b))
    return out


def test_mutated_real_lines_agree_with_twin(ansor_lines: list[bytes], tmp_path: Path) -> None:
    """Randomly corrupted real records: both readers accept or skip the same lines, for the
    same reasons, and produce the same records."""
    rng = random.Random(0)
    bad = [m for line in ansor_lines for m in _mutations(line, rng, 40)]
    path = tmp_path / "mutated.json"
    path.write_bytes(b"\n".join(bad) + b"\n")
    fast = tcl.read_records(path, strict=False)
    slow = read_records_reference(path, strict=False)
    assert len(fast) + sum(fast.report.skipped.values()) > 0.95 * len(
        bad
    )  # few became blank/comments
    assert len(fast.report.skipped) >= 3  # several reasons, not only invalid_json
    assert_same_records(fast, slow)


_HUGE = "__HUGE__"


def _structural_mutations(line: bytes, rng: random.Random, n: int) -> list[bytes]:
    """Valid JSON with one value replaced or removed: reaches the type and range checks."""
    replacements: list[object] = [None, "x", _HUGE, -1, [], {}, 0.5, True, 2**70, "a$b", "SP"]
    out = []
    for _ in range(n):
        record = json.loads(line)
        node, path = record, []
        while isinstance(node, (list, dict)) and node and rng.random() < 0.8:
            key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
            path.append((node, key))
            node = node[key]
        if not path:
            continue
        parent, key = path[-1]
        if rng.random() < 0.2:
            del parent[key]
        else:
            parent[key] = rng.choice(replacements)
        out.append(json.dumps(record).replace(f'"{_HUGE}"', "1e999").encode())
    return out


def test_structurally_mutated_lines_agree_with_twin(
    ansor_lines: list[bytes], tmp_path: Path
) -> None:
    rng = random.Random(1)
    bad = [m for line in ansor_lines for m in _structural_mutations(line, rng, 40)]
    path = tmp_path / "mutated.json"
    path.write_bytes(b"\n".join(bad) + b"\n")
    fast = tcl.read_records(path, strict=False)
    slow = read_records_reference(path, strict=False)
    assert {"wrong_type", "out_of_range", "missing_field"} <= set(fast.report.skipped)
    assert len(fast) > 0.3 * len(bad)  # many mutations leave a readable record
    assert_same_records(fast, slow)
