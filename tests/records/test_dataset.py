"""The committed starter dataset (data/): every platform's database loads and agrees with its
manifest."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import tcl

from conftest import REPO

PLATFORMS = sorted(p for p in (REPO / "data").glob("*") if (p / "manifest.json").exists())


@pytest.mark.skipif(not PLATFORMS, reason="no dataset under data/")
@pytest.mark.parametrize("directory", PLATFORMS, ids=[p.name for p in PLATFORMS])
def test_platform_database_matches_manifest(directory: Path) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    assert directory.name == f"{manifest['platform']['name']}-{manifest['platform']['id']}"
    rs = tcl.read_records(directory)
    assert len(rs) > 0 and rs.report.skipped == {}
    assert set(rs.tasks.workload_key) <= set(manifest["tasks"])
    assert len(rs.targets) == 1
    target = json.loads(rs.targets[0])
    assert target["mcpu"] == manifest["platform"]["target"]["mcpu"]
    per_task = np.bincount(rs.columns["task"])
    assert per_task.max() <= 48
    measured = rs.columns["error"] == 0
    assert measured.mean() > 0.9 and (rs.columns["mean_cost"][measured] > 0).all()
    with gzip.open(directory / "noise.jsonl.gz", "rt") as f:
        assert sum(1 for _ in f) > 0


def test_two_platforms_at_least() -> None:
    if not PLATFORMS:
        pytest.skip("no dataset under data/")
    assert (
        len({json.loads((p / "manifest.json").read_text())["platform"]["name"] for p in PLATFORMS})
        >= 2
    )
