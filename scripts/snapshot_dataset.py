"""Copies a collection root into the repository's data/ directory, gzip-compressed: each
platform's store and its search-drawn stores (``search/``, tcl collect --search; and
``search-nchw16c/``, with --conv-layout NCHW16c).

Only complete lines are copied, the records before the workloads (a workload line is always
written before its first record), so a snapshot taken while the collector runs is consistent.
Usage: python scripts/snapshot_dataset.py COLLECT_ROOT [DATA_DIR]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from pathlib import Path

from tcl.tuning.collect_search import is_search_dir

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
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("collect_root", type=Path, help="a directory of collection stores")
    parser.add_argument(
        "data_dir",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "data",
        help="default: the repository's data/",
    )
    args = parser.parse_args()
    root, data = args.collect_root, args.data_dir
    # A platform holds random programs, search-drawn ones, or both (a host collected with
    # tcl collect --search alone has only the second).
    for platform in sorted(p for p in root.iterdir() if p.is_dir()):
        # The platform's random programs, and its search-drawn ones (tcl collect --search,
        # search-<layout> for convolutions in another layout).
        searched = sorted(p for p in platform.iterdir() if p.is_dir() and is_search_dir(p.name))
        for store in [platform, *searched]:
            if (store / "manifest.json").exists():
                name = str(store.relative_to(root))
                snapshot(store, data / name)
                size = (data / name / "database_tuning_record.json.gz").stat().st_size
                print(f"{name}: {size / 1e6:.1f} MB of records (gzip)")


def snapshot(store: Path, out: Path) -> None:
    """One store's manifest and files, gzip-compressed, complete lines only."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(store / "manifest.json", out / "manifest.json")
    for name in FILES:
        if (store / name).exists():
            with gzip.open(out / f"{name}.gz", "wb", compresslevel=9) as f:
                f.write(complete_lines(store / name))


if __name__ == "__main__":
    main()
