"""Memory to reject one huge line of JSON garbage, beside reading the same size of real records.

Each input is read by ``tcl.read_records`` (strict, 2 threads) in a fresh process, whose peak
resident memory (``VmHWM``: its own, unlike ``ru_maxrss``, which Linux carries over from the
parent across fork and exec) is reported together with that of a process that only imports tcl
(the floor). Inputs, each ``--mb`` megabytes on one line: an array of numbers
(``[1,1,...]``: a value every 2 bytes, the worst case for the parse tape), an array of empty
strings, an array of empty arrays, and a record whose ``i`` holds that array of numbers; the
baseline is a file of the same size of real MetaSchedule records (the bundled sample, repeated),
which is read, not rejected. Prints one JSON line.

Usage: python bench/bench_line_memory.py [--mb 50] [--out bench/out/line-memory]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from _common import machine

from tcl.records import sample_data_path

ROOT = Path(__file__).resolve().parent.parent

READ = """
import sys, tcl
outcome = "import only"
if len(sys.argv) > 1:
    try:
        rs = tcl.read_records(sys.argv[1], num_threads=2)
        outcome = f"read {len(rs)} records"
    except tcl.RecordError as err:
        outcome = f"{err.reason}: {err.detail}"[:120]
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(int(status.split()[0]), outcome)
"""

# name -> (head, repeated item, tail): one line of about the asked size, written in pieces so
# that this process never holds it.
GARBAGE = {
    "numbers": ("[", "1,", "1]"),
    "empty strings": ("[", '"",', '""]'),
    "empty arrays": ("[", "[],", "[]]"),
    "record of numbers": ('{"i":[', "1,", "1]}"),
}


def write_line(path: Path, head: str, item: str, tail: str, size: int) -> None:
    chunk = item * 100_000
    with open(path, "w") as f:
        f.write(head)
        for _ in range(size // len(chunk)):
            f.write(chunk)
        f.write(tail + "\n")


def real_records(out: Path, size: int) -> Path:
    """A MetaSchedule database of about ``size`` bytes: the bundled sample's records repeated."""
    sample = sample_data_path()
    db = out / "real"
    db.mkdir(parents=True, exist_ok=True)
    shutil.copy(sample / "database_workload.json", db / "database_workload.json")
    lines = (sample / "database_tuning_record.json").read_bytes().splitlines()
    per_copy = sum(len(ln) + 1 for ln in lines)
    (db / "database_tuning_record.json").write_bytes(
        b"\n".join(lines * max(1, size // per_copy)) + b"\n"
    )
    return db


def peak_mb(path: Path | None) -> tuple[float, str]:
    """Peak RSS (MiB) of a fresh process reading ``path`` (None: importing tcl only), and what
    the read gave."""
    args = [sys.executable, "-c", READ] + ([str(path)] if path is not None else [])
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    kb, outcome = done.stdout.strip().split(" ", 1)
    return int(kb) / 1024, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "line-memory")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    size = args.mb * 1_000_000
    floor, _ = peak_mb(None)
    baseline, baseline_outcome = peak_mb(real_records(args.out, size))
    results = {}
    for name, (head, item, tail) in GARBAGE.items():
        path = args.out / f"{name.replace(' ', '_')}.json"
        write_line(path, head, item, tail, size)
        peak, outcome = peak_mb(path)
        results[name] = {
            "peak_rss_mb": round(peak, 1),
            "over_import_mb": round(peak - floor, 1),
            "over_import_x_line_size": round((peak - floor) * 2**20 / size, 2),
            "outcome": outcome,
        }
        path.unlink()
    print(
        json.dumps(
            {
                "bench": "line_memory",
                "line_mb": args.mb,
                "import_only_peak_rss_mb": round(floor, 1),
                "baseline_real_records": {
                    "peak_rss_mb": round(baseline, 1),
                    "outcome": baseline_outcome,
                },
                "garbage_lines": results,
                "method": "peak RSS (VmHWM) of a fresh process per input, strict read, 2 threads",
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
