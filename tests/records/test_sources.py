"""tcl.records.sources: user paths into record files, whatever the directory tree holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import tcl
from tcl.records import sample_data_path
from tcl.records.sources import find_sources


def test_symlink_loops_and_fifos_end_and_count_once(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(sample_data_path(), root / "db")
    (root / "sub").mkdir()
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "sub" / "up").symlink_to(root, target_is_directory=True)
    (root / "sub" / "again").symlink_to(root / "db", target_is_directory=True)
    os.mkfifo(root / "pipe.json")  # a reader that opened it would wait forever
    sources = find_sources([root])
    assert [s.path.name for s in sources] == ["database_tuning_record.json"]
    assert len(tcl.read_records(root)) == 96


def test_thousands_of_files_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    line = (sample_data_path() / "database_tuning_record.json").read_text().splitlines()[0]
    workloads = (sample_data_path() / "database_workload.json").read_text()
    for i in range(2000):
        run = tmp_path / f"run{i:04d}"
        run.mkdir()
        (run / "database_tuning_record.json").write_text(line + "\n")
        (run / "database_workload.json").write_text(workloads)
    code = (
        "import resource, sys, tcl; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
        "print(len(tcl.read_records(sys.argv[1])))"
    )
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft > 256 or soft == resource.RLIM_INFINITY  # the limit below is a real cut
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "2000"
