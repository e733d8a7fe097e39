"""Record ingest speed: the C++ reader (2 threads, 1 thread) against its pure-Python twin, and
reloading the binary RecordSet against parsing, on one large input, in one run.

The input replicates real records of both formats with perturbed costs, timestamps, split
factors and decisions: Ansor lines from the real logs in TCL_ANSOR_DIR (where it is unset, from
the Ansor-format logs tcl writes itself, tcl.records.synthetic; the JSON line says which) and
MetaSchedule lines from the bundled sample database. Prints one JSON line.

Usage: python bench/bench_ingest.py [--records 300000] [--out bench/out/ingest]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from _common import ansor_dir, machine

import tcl
from tcl.records import sample_data_path
from tcl.records.reference import read_records_reference
from tcl.records.synthetic import write_ansor_logs

ROOT = Path(__file__).resolve().parent.parent


def perturbed_ansor(lines: list[str], n: int, rng: random.Random) -> list[str]:
    records = [json.loads(line) for line in lines]
    out = []
    for k in range(n):
        r = records[k % len(records)]
        r["r"][0] = [c * rng.uniform(0.5, 2.0) for c in r["r"][0]]
        r["r"][3] = 1600000000 + k
        for step in r["i"][1][1]:
            if step[0] == "SP" and step[4]:
                step[4][0] = rng.choice([1, 2, 4, 8, 16])
        out.append(json.dumps(r))
    return out


def perturbed_metaschedule(lines: list[str], n: int, rng: random.Random) -> list[str]:
    records = [json.loads(line) for line in lines]
    out = []
    for k in range(n):
        r = records[k % len(records)]
        r[1][1] = [c * rng.uniform(0.5, 2.0) for c in r[1][1]]
        for decision in r[1][0][1]:
            if isinstance(decision[1], int):
                decision[1] = rng.randrange(3)
        out.append(json.dumps(r, separators=(",", ":")))
    return out


def timed(fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "ingest")
    args = parser.parse_args()
    rng = random.Random(0)
    args.out.mkdir(parents=True, exist_ok=True)

    sample = sample_data_path()
    ms_lines = (sample / "database_tuning_record.json").read_text().splitlines()
    ansor = ansor_dir()
    ansor_source = "real (TCL_ANSOR_DIR)" if ansor else "generated (tcl.records.synthetic)"
    ansor = ansor or write_ansor_logs(args.out / "generated-ansor")
    ansor_lines = []
    for path in sorted(ansor.glob("*.json")):
        ansor_lines += [
            ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")
        ]
    n_ansor = args.records * 2 // 3
    n_ms = args.records - n_ansor
    data_dir = args.out / "input"
    db_dir = data_dir / "db"
    db_dir.mkdir(parents=True, exist_ok=True)
    if n_ansor:
        (data_dir / "ansor.json").write_text(
            "\n".join(perturbed_ansor(ansor_lines, n_ansor, rng)) + "\n"
        )
    (db_dir / "database_workload.json").write_bytes(
        (sample / "database_workload.json").read_bytes()
    )
    (db_dir / "database_tuning_record.json").write_text(
        "\n".join(perturbed_metaschedule(ms_lines, n_ms, rng)) + "\n"
    )
    total_bytes = sum(p.stat().st_size for p in data_dir.rglob("*.json"))

    t2, rs = timed(lambda: tcl.read_records(data_dir, num_threads=2))
    t1, _ = timed(lambda: tcl.read_records(data_dir, num_threads=1))
    tpy, twin = timed(lambda: read_records_reference(data_dir), repeat=1)
    assert len(rs) == len(twin) == args.records
    assert all(
        (rs.columns[k] == twin.columns[k]).all() for k in ("task", "token_kinds", "token_fields")
    )
    saved = args.out / "records.tcl"
    rs.save(saved)
    treload, back = timed(lambda: tcl.RecordSet.load(saved))
    assert len(back) == len(rs)

    figures = {
        "records": len(rs),
        "ansor_records": n_ansor,
        "ansor_lines_from": ansor_source,
        "metaschedule_records": n_ms,
        "input_mb": round(total_bytes / 1e6, 1),
        "tokens": len(rs.columns["token_kinds"]),
        "records_per_s": round(len(rs) / t2),
        "records_per_s_1thread": round(len(rs) / t1),
        "mb_per_s": round(total_bytes / 1e6 / t2, 1),
        "thread_scaling": round(t1 / t2, 2),
        "python_records_per_s": round(len(rs) / tpy),
        "speedup_vs_python": round(tpy / t2, 1),
        "reload_seconds": round(treload, 4),
        "parse_seconds": round(t2, 4),
        "reload_speedup": round(t2 / treload, 1),
        "binary_mb": round(saved.stat().st_size / 1e6, 1),
        "method": "best of 3 (Python twin: 1) wall-clock reads of the same files, page-cached",
        "machine": machine(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
