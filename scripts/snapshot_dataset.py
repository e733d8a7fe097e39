"""Copies a collection root into the repository's data/ directory, gzip-compressed.

Only complete lines are copied, the records before the workloads (a workload line is always
written before its first record), so a snapshot taken while the collector runs is consistent.
Usage: python scripts/snapshot_dataset.py COLLECT_ROOT [DATA_DIR]
"""

from __future__ import annotations

import gzip
import shutil
import sys
from pathlib import Path

FILES = (
    "database_tuning_record.json",
    "noise.jsonl",
    "measure_errors.jsonl",
    "database_workload.json",
)


def complete_lines(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: data.rfind(b"\n") + 1]


def main() -> None:
    root = Path(sys.argv[1])
    data = (
        Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent.parent / "data"
    )
    for platform in sorted(p for p in root.iterdir() if (p / "manifest.json").exists()):
        out = data / platform.name
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(platform / "manifest.json", out / "manifest.json")
        for name in FILES:
            if (platform / name).exists():
                with gzip.open(out / f"{name}.gz", "wb", compresslevel=9) as f:
                    f.write(complete_lines(platform / name))
        lines = (out / "database_tuning_record.json.gz").stat().st_size
        print(f"{platform.name}: {lines / 1e6:.1f} MB of records (gzip)")


if __name__ == "__main__":
    main()
