"""The committed starter dataset (data/): every platform's database loads and agrees with its
manifest; the held-out networks' pools of the benchmarks (bench/pools/) are kept out of it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

import tcl

from conftest import REPO

PLATFORMS = sorted(p for p in (REPO / "data").glob("*") if (p / "manifest.json").exists())
# search-drawn stores (tcl collect --search), beside a platform's random programs or alone, and
# those of convolutions in another layout (search-nchw16c)
SEARCH_STORES = sorted(p.parent for p in (REPO / "data").glob("*/search*/manifest.json"))
# the replay's pools (bench_learning.py): search-drawn programs of held-out networks
POOL_STORES = sorted(p.parent for p in (REPO / "bench" / "pools").glob("*/search/manifest.json"))


@pytest.mark.skipif(not PLATFORMS, reason="no dataset under data/")
@pytest.mark.parametrize("directory", PLATFORMS, ids=[p.name for p in PLATFORMS])
def test_platform_database_matches_manifest(directory: Path) -> None:
    manifest = json.loads((directory / "manifest.json").read_text())
    assert directory.name == f"{manifest['platform']['name']}-{manifest['platform']['id']}"
    rs = tcl.read_records(directory)
    assert len(rs) > 0 and rs.report.skipped == {}
    assert set(rs.tasks.workload_key) <= set(manifest["tasks"])
    assert len(rs.targets) == 1
    target, stated = json.loads(rs.targets[0]), manifest["platform"]["target"]
    assert target["kind"] == stated["kind"]
    # a CPU's records name its mcpu, a GPU's its arch
    assert target.get("mcpu") == stated.get("mcpu") and target.get("arch") == stated.get("arch")
    per_task = np.bincount(rs.columns["task"])
    assert per_task.max() <= 48
    measured = rs.columns["error"] == 0
    assert measured.mean() > 0.9 and (rs.columns["mean_cost"][measured] > 0).all()
    with gzip.open(directory / "noise.jsonl.gz", "rt") as f:
        assert sum(1 for _ in f) > 0


@pytest.mark.skipif(not SEARCH_STORES, reason="no search-drawn store under data/")
@pytest.mark.parametrize(
    "directory", SEARCH_STORES, ids=[f"{p.parent.name}/{p.name}" for p in SEARCH_STORES]
)
def test_search_store_matches_manifest(directory: Path) -> None:
    """A search store is its platform's (the directory it lies in), was drawn by a search, and
    holds training networks' tasks only: the held-out networks are what the benchmarks tune."""
    from tcl import zoo

    manifest, measured = _search_store(directory)
    for key in measured:
        assert not set(manifest["tasks"][key]["networks"]) & set(zoo.HELD_OUT), key


@pytest.mark.skipif(not POOL_STORES, reason="no pool under bench/pools/")
@pytest.mark.parametrize("directory", POOL_STORES, ids=[p.parent.name for p in POOL_STORES])
def test_held_out_pool_matches_manifest(directory: Path) -> None:
    """A replay pool is a search store of held-out networks' tasks only (the training loads
    leave every task of a held-out network out, so a model scored on it never learnt them)."""
    from tcl import zoo

    manifest, measured = _search_store(directory)
    for key in measured:
        assert set(manifest["tasks"][key]["networks"]) <= set(zoo.HELD_OUT), key


def _search_store(directory: Path) -> tuple[dict, set[str]]:
    """A search store's manifest, which its records agree with (asserted), and the workload
    keys of its records."""
    manifest = json.loads((directory / "manifest.json").read_text())
    platform = manifest["platform"]
    assert directory.parent.name == f"{platform['name']}-{platform['id']}"
    assert manifest["drawn"]["by"] == "evolutionary search"
    rs = tcl.read_records(directory)
    assert len(rs) > 0 and rs.report.skipped == {}
    assert set(rs.tasks.workload_key) <= set(manifest["tasks"])
    assert len(rs.targets) == 1
    target = json.loads(rs.targets[0])
    assert target.get("mcpu") == platform["target"].get("mcpu")
    measured = rs.columns["error"] == 0
    assert measured.mean() > 0.9 and (rs.columns["mean_cost"][measured] > 0).all()
    return manifest, set(rs.tasks.workload_key)


def test_two_platforms_at_least() -> None:
    if not PLATFORMS:
        pytest.skip("no dataset under data/")
    assert (
        len({json.loads((p / "manifest.json").read_text())["platform"]["name"] for p in PLATFORMS})
        >= 2
    )


@pytest.mark.skipif(not PLATFORMS, reason="no dataset under data/")
def test_network_subsets_follow_shared_tasks() -> None:
    from tcl import zoo
    from tcl.records.dataset import load_dataset

    data = load_dataset(PLATFORMS[0])
    training = data.without_networks(list(zoo.HELD_OUT))
    assert not set(training.networks_with_records()) & set(zoo.HELD_OUT)
    assert set(data.networks_with_records()) <= set(data.network_names())
    # ResNet-34's tasks are all ResNet-18's: asking for ResNet-18 brings ResNet-34's records.
    resnet18 = training.of_networks(["resnet18"])
    assert 0 < len(resnet18.records) < len(training.records)
    assert {"resnet18", "resnet34"} <= set(resnet18.networks_with_records())
    assert not set(resnet18.networks_with_records()) & set(zoo.HELD_OUT)


def test_a_task_keeps_every_collection_s_networks() -> None:
    """A search store lists only the training networks it searched; a task it shares with a
    held-out network stays held out when both stores are loaded, in either order."""
    from tcl import zoo
    from tcl.records.dataset import load_dataset

    with_search = [p for p in PLATFORMS if (p / "search" / "manifest.json").exists()]
    if not with_search:
        pytest.skip("no search-drawn store under data/")
    directory = with_search[0]
    collected = json.loads((directory / "manifest.json").read_text())["tasks"]
    for order in ([directory, directory / "search"], [directory / "search", directory]):
        both = load_dataset(order)
        for key, networks in zip(both.records.tasks.workload_key, both.networks, strict=True):
            assert set(collected.get(key, {}).get("networks", {})) <= set(networks)
        held = [t for t, nets in enumerate(both.networks) if set(nets) & set(zoo.HELD_OUT)]
        kept = both.without_networks(list(zoo.HELD_OUT))
        assert not np.isin(kept.records.columns["task"], held).any()
        assert len(kept.records) < len(both.records)
