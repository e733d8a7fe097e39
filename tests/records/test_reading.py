"""tcl.records.reading: files read in
pieces and batches give exactly the records of one whole read, with
memory bounded by a piece, whatever a file expands to."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tcl
from tcl.records import reading, sample_data_path, sources
from tcl.records.reference import read_records_reference

from conftest import assert_same_records


def _line(task: int, target: str, pragma: int, cost: float) -> str:
    """An Ansor record: task, target and step kinds vary, so tasks, targets and kinds new to the
    vocabulary appear in later pieces too."""
    steps = [["SP", 2, 0, 64, [4, 8 + task % 3], 1], ["AN", 2, 0, 1 + task % 5]]
    steps.append(["PR", 2, 0, f"step{pragma % 7}$16"])
    if task % 4 == 0:
        steps.append(["CHW", 2, f"scope{task % 3}"])
    key = json.dumps([f"task{task}", 1, 8, 8, 16])
    record = {
        "i": [[key, target, [2, 64, 64, 0, 0, 0, 0, 0]], [[], steps]],
        "r": [[cost], 0, cost, 1],
    }
    return json.dumps(record)


def _write_logs(directory: Path, bad_at: int | None = None) -> list[Path]:
    directory.mkdir(exist_ok=True)
    paths = []
    for f in range(3):
        lines = [
            _line((f * 7 + k) % 23, ["llvm", "cuda"][k % 2], k, 0.001 * (k + 1)) for k in range(900)
        ]
        for k in range(0, 900, 97):
            lines[k] = "# comment"
        if bad_at is not None and f == 1:
            lines[bad_at] = lines[bad_at].replace('"SP", 2, 0', '"SP", 2, "x"')
        text = "\n".join(lines) + "\n"
        path = directory / f"log{f}.json"
        if f == 2:
            path = directory / "log2.json.gz"
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        paths.append(path)
    return paths


def test_pieces_and_batches_give_the_records_of_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = _write_logs(tmp_path / "logs")
    db = tmp_path / "db"
    db.mkdir()
    for name in ("database_tuning_record.json", "database_workload.json"):
        (db / name).write_bytes((sample_data_path() / name).read_bytes())
    inputs = [logs[0], db, *logs[1:]]
    whole = tcl.read_records(inputs)
    monkeypatch.setattr(sources, "PIECE_BYTES", 8 << 10)  # ~30 pieces per log
    pieces = list(sources.read_pieces(logs[2]))
    assert len(pieces) > 20 and all(bytes(p).endswith(b"\n") for p in pieces)
    batches = []
    original = reading._batches
    monkeypatch.setattr(
        reading, "_batches", lambda found: (batches.append(b) or b for b in original(found))
    )
    pieced = tcl.read_records(inputs)
    assert len(batches) > 60
    assert_same_records(whole, pieced)
    assert whole.vocab.kinds == pieced.vocab.kinds and whole.report.lines == pieced.report.lines
    assert len(whole) == 3 * 890 + 96 and len(whole.tasks) > 23
    assert_same_records(pieced, read_records_reference(inputs))


def test_errors_in_later_pieces_name_the_line_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = _write_logs(tmp_path, bad_at=700)
    monkeypatch.setattr(sources, "PIECE_BYTES", 8 << 10)
    with pytest.raises(tcl.RecordError) as info:
        tcl.read_records(logs)
    err = info.value
    assert (err.file, err.line, err.reason, err.field) == (
        str(logs[1]),
        701,
        "wrong_type",
        "i[1][1][0][2]",
    )
    lenient = tcl.read_records(logs, strict=False)
    assert lenient.report.skipped == {"wrong_type": 1}
    assert lenient.report.skip_examples["wrong_type"][:2] == (str(logs[1]), 701)


def test_a_file_that_shrinks_while_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (log,) = _write_logs(tmp_path)[:1]
    monkeypatch.setattr(sources, "PIECE_BYTES", 8 << 10)
    original = reading._batches

    def truncate_after_first_batch(found: list[sources.RecordSource]) -> Iterator[object]:
        for k, batch in enumerate(original(found)):
            yield batch
            if k == 0:
                with open(log, "r+b") as f:
                    f.truncate(20000)

    monkeypatch.setattr(reading, "_batches", truncate_after_first_batch)
    with pytest.raises(tcl.TclError, match=r"log0.json: the file shrank from \d+ to \d+ bytes"):
        tcl.read_records(log)


def test_gz_bomb_reads_under_a_memory_limit(tmp_path: Path) -> None:
    # 512 MiB of blank lines between two records, in ~0.5 MB of gzip (members concatenated);
    # the reader gets 384 MiB of address space beyond what importing tcl took.
    blank = gzip.compress(b"\n" * (64 << 20), compresslevel=9)
    bomb = tmp_path / "bomb.json.gz"
    with open(bomb, "wb") as f:
        f.write(gzip.compress((_line(1, "llvm", 1, 0.5) + "\n").encode()))
        for _ in range(8):
            f.write(blank)
        f.write(gzip.compress((_line(2, "llvm", 2, 0.25) + "\n").encode()))
    assert bomb.stat().st_size < 1 << 20
    code = (
        "import resource, sys, tcl\n"
        "vm = int(open('/proc/self/status').read().split('VmSize:')[1].split()[0]) * 1024\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (384 << 20), resource.RLIM_INFINITY))\n"
        "rs = tcl.read_records(sys.argv[1], num_threads=2)\n"
        "print(len(rs), rs.report.lines, rs.columns['line'].tolist())\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split()[:2] == ["2", str((64 << 20) * 8 + 2)]
    assert run.stdout.strip().endswith(f"[1, {(64 << 20) * 8 + 2}]")


def test_unreadable_gzip_is_one_error_naming_the_file(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(os.urandom(10000))[:5000])
    plain = tmp_path / "plain.json.gz"
    plain.write_text(_line(1, "llvm", 1, 0.5))
    for bad in (cut, plain):
        with pytest.raises(tcl.TclError, match=rf"{bad.name}: not a readable gzip file"):
            tcl.read_records(bad)
