"""tcl collect --search on tiny shapes: the search starts from the task's measured programs,
keeps every candidate it measures (never one the task already holds), resumes, and reads as
records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

import tcl
from tcl.cli import main
from tcl.errors import CheckpointError
from tcl.records.store import RECORDS
from tcl.training.train import search_drawn
from tcl.tuning import platforms
from tcl.tuning.collect import collect, plan_tasks
from tcl.tuning.collect_search import (
    SEARCH_DIR,
    _drawn_by,
    _tasks_to_search,
    collect_search,
    search_dir,
)

pytestmark = pytest.mark.tvm

PLATFORM = "cpu-x86-64-1t"


def _keys(directory: Path) -> list[tuple[int, str]]:
    lines = (directory / RECORDS).read_text().splitlines()
    return [(r[0], json.dumps(r[1][0], separators=(",", ":"))) for r in map(json.loads, lines)]


def _workloads(directory: Path) -> list[str]:
    lines = (directory / "database_workload.json").read_text().splitlines()
    return [json.loads(line)[0] for line in lines]


def test_search_keeps_what_it_measures_beside_the_random_programs(tmp_path: Path) -> None:
    platform = platforms.get(PLATFORM)
    collect(["resnet18"], platform, tmp_path, programs_per_task=4, max_tasks=1, tiny=True)
    summary = collect_search(
        ["resnet18"], platform, tmp_path, programs_per_task=6, per_round=3, max_tasks=1,
        tiny=True, progress=False, cost_model="xgb",
    )  # fmt: skip
    search = tmp_path / SEARCH_DIR
    assert summary.measured == 6 and summary.records_total == 6 and summary.tasks == 1
    # The search never measures a program its task holds, random or searched.
    random_programs = {key for _, key in _keys(tmp_path)}
    searched = [key for _, key in _keys(search)]
    assert len(set(searched)) == 6 and not random_programs & set(searched)
    assert _workloads(search) == _workloads(tmp_path)  # the same task, by structural hash
    manifest = json.loads((search / "manifest.json").read_text())
    assert manifest["drawn"]["by"] == "evolutionary search"
    assert manifest["drawn"]["cost_model"] == "xgb" and manifest["protocol"]["repeat"] == 3
    assert manifest["drawn"]["model"] is None and manifest["guides"] == [manifest["drawn"]]
    rs = tcl.read_records(search)
    assert len(rs) == 6 and (rs.columns["error"] == 0).all()
    # Run again: the task holds its programs, nothing more is measured; asked for more, the
    # search goes on from all nine.
    again = collect_search(
        ["resnet18"], platform, tmp_path, programs_per_task=6, max_tasks=1, tiny=True,
        progress=False, cost_model="xgb",
    )  # fmt: skip
    assert again.measured == 0 and again.records_total == 6
    more = collect_search(
        ["resnet18"], platform, tmp_path, programs_per_task=8, per_round=2, max_tasks=1,
        tiny=True, progress=False, cost_model="xgb",
    )  # fmt: skip
    assert more.measured == 2 and len(set(_keys(search))) == 8


def test_a_blocked_layouts_programs_are_searched_into_their_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``conv_layout`` the convolutions are searched as ``tcl tune --conv-layout`` tunes
    them: other workloads than NCHW's, which no random program seeds, in their own store. The
    tasks the layout leaves as they were (the 3-channel stem, the classifier) are not searched
    there."""
    from tcl.tuning import collect_search as module

    planned: dict[str | None, list[Any]] = {}  # what the collector planned, by layout

    def plans(*args: Any, conv_layout: str | None = None, **kwargs: Any) -> list[Any]:
        planned[conv_layout] = plan_tasks(*args, conv_layout=conv_layout, **kwargs)
        return planned[conv_layout]

    def to_search(*args: Any) -> list[Any]:
        planned["searched"] = _tasks_to_search(*args)
        return planned["searched"]

    monkeypatch.setattr(module, "plan_tasks", plans)
    monkeypatch.setattr(module, "_tasks_to_search", to_search)
    platform = platforms.get(PLATFORM)
    summary = collect_search(
        ["resnet18"], platform, tmp_path, programs_per_task=2, per_round=2, max_tasks=1,
        tiny=True, progress=False, cost_model="xgb", conv_layout="NCHW16c",
    )  # fmt: skip
    store = tmp_path / search_dir("NCHW16c")
    assert store.name == "search-nchw16c" and not (tmp_path / SEARCH_DIR).exists()
    assert summary.measured == 2 and summary.tasks == 1
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["conv_layout"] == "NCHW16c"
    (task,) = manifest["tasks"].values()
    assert "conv2d_NCHWc" in task["name"]  # ResNet-18's first task, blocked by 16 channels
    rs = tcl.read_records(store)
    assert len(rs) == 2 and search_drawn(rs).all()  # training reads them as search-drawn
    unchanged = {p.shash for p in planned[None]}
    blocked = planned["searched"]
    assert blocked and not unchanged & {p.shash for p in blocked}
    assert len(blocked) < len(planned["NCHW16c"])  # the tasks the layout leaves as they were
    assert all("NCHWc" in p.name for p in blocked if "conv2d" in p.name)


def test_cli_passes_the_layout_to_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tcl.tuning.collect import CollectSummary

    given: dict[str, Any] = {}

    def searched(networks: list[str], *args: Any, **kwargs: Any) -> CollectSummary:
        given.update(kwargs, networks=networks)
        return CollectSummary(0, 0, 1.0, 0, 0, 0.0, float("nan"), 0)

    monkeypatch.setattr("tcl.tuning.collect_search.collect_search", searched)
    argv = ["collect", "--network", "resnet18", "--platform", PLATFORM, "--out", str(tmp_path)]
    assert main([*argv, "--search", "--conv-layout", "NCHW16c"]) == 0
    assert given["conv_layout"] == "NCHW16c" and given["networks"] == ["resnet18"]
    assert main([*argv, "--search", "--conv-layout", "NCHW4c"]) == 2  # not a layout of tcl's


def test_cli_refuses_search_options_without_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["collect", "--network", "resnet18", "--platform", PLATFORM, "--out", str(tmp_path)]
    assert main([*base, "--cost-model", "xgb"]) == 2
    assert "options of --search" in capsys.readouterr().err
    assert main([*base, "--conv-layout", "NCHW16c"]) == 2
    assert "options of --search" in capsys.readouterr().err
    assert main([*base, "--search", "--pool-only"]) == 2
    assert "--search measures on this machine" in capsys.readouterr().err


def test_a_checkpoint_guides_only_tcl_models_and_is_named_by_its_hash(tmp_path: Path) -> None:
    checkpoint = tmp_path / "candidate.pt"
    checkpoint.write_bytes(b"weights")
    with pytest.raises(ValueError, match="not 'xgb'"):
        collect_search(["resnet18"], platforms.get(PLATFORM), tmp_path, cost_model="xgb",
                       model_path=checkpoint)  # fmt: skip
    assert not (tmp_path / SEARCH_DIR).exists()  # refused before anything is stored
    with pytest.raises(CheckpointError, match=r"candidate\.pt: not a readable tcl checkpoint"):
        collect_search(["resnet18"], platforms.get(PLATFORM), tmp_path, cost_model="tcl",
                       model_path=checkpoint)  # fmt: skip
    assert not (tmp_path / SEARCH_DIR).exists()  # nor is a checkpoint that will not load
    drawn = _drawn_by("tcl", checkpoint, 3)
    assert drawn["model"] == {
        "file": "candidate.pt",
        "sha256": hashlib.sha256(b"weights").hexdigest(),
    }
    assert _drawn_by("tcl", None, 3)["model"] is None


def test_a_task_whose_search_finds_nothing_new_is_not_searched_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[str] = []

    def nothing_new(plan: Any, *args: Any) -> tuple[int, int]:
        searched.append(plan.shash)  # as a design space of a few programs, all held
        return 0, 0

    monkeypatch.setattr("tcl.tuning.collect_search._search_task", nothing_new)
    platform = platforms.get(PLATFORM)
    settings: dict[str, Any] = {
        "programs_per_task": 2, "max_tasks": 2, "tiny": True, "progress": False
    }  # fmt: skip
    first = collect_search(["resnet18"], platform, tmp_path, **settings)
    assert first.measured == 0 and len(set(searched)) == 2
    manifest = json.loads((tmp_path / SEARCH_DIR / "manifest.json").read_text())
    assert manifest["exhausted"] == dict.fromkeys(searched, 0)
    collect_search(["resnet18"], platform, tmp_path, **settings)
    assert len(searched) == 2  # neither is searched again


def test_tasks_a_skipped_network_shares_are_not_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Training data for a model scored on held-out networks: ResNet-34's tasks are all
    ResNet-18's, so skipping ResNet-34 leaves nothing of ResNet-18 to search."""
    searched: list[str] = []

    def nothing_new(plan: Any, *args: Any) -> tuple[int, int]:
        searched.append(plan.shash)
        return 0, 0

    monkeypatch.setattr("tcl.tuning.collect_search._search_task", nothing_new)
    platform = platforms.get(PLATFORM)
    summary = collect_search(
        ["resnet18"], platform, tmp_path, programs_per_task=2, tiny=True, progress=False,
        skip_networks=["resnet34"],
    )  # fmt: skip
    # without the skip, ResNet-18's tasks are searched (the test above)
    assert searched == [] and summary.tasks == 0
