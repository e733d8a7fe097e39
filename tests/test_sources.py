"""tcl.sources: expanding user paths into record files, whatever the directory tree holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import tcl
from tcl.cli import sample_data_path
from tcl.sources import find_sources


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
