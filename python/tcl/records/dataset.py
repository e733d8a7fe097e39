"""Measured records together with what their collection manifests say about the tasks: which
networks each task occurs in, how often (the weight of the top-k score), its name and FLOPs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tcl.errors import TclError
from tcl.records.recordset import RecordSet, read_records
from tcl.records.tokenizer import TokenizerConfig, Vocab


@dataclass
class Dataset:
    """``records`` plus, per task row, ``networks`` (network -> weight) and ``names``."""

    records: RecordSet
    networks: list[dict[str, int]]
    names: list[str]

    def network_names(self) -> list[str]:
        return sorted({n for nets in self.networks for n in nets})

    def networks_with_records(self) -> list[str]:
        """Networks with a task among the records (``network_names`` lists the manifest's)."""
        tasks = set(self.records.columns["task"].tolist())
        return sorted({n for t in tasks for n in self.networks[t]})

    def tasks_of(self, network: str) -> list[int]:
        return [t for t, nets in enumerate(self.networks) if network in nets]

    def subset(self, rows: np.ndarray) -> Dataset:
        return Dataset(self.records.select(rows), self.networks, self.names)

    def without_networks(self, networks: Sequence[str]) -> Dataset:
        """Records of tasks that occur in none of ``networks`` (held out: never seen in training,
        not even through a task they share with a training network)."""
        banned = [t for t, nets in enumerate(self.networks) if set(nets) & set(networks)]
        return self.subset(~np.isin(self.records.columns["task"], banned))

    def check_networks(self, networks: Sequence[str], option: str) -> list[str]:
        """``networks`` when the records hold each of them; else a TclError saying which are
        unknown and which the records hold (a typo must not hold out or evaluate nothing)."""
        return check_network_names(networks, self.network_names(), option)

    def of_networks(self, networks: Sequence[str]) -> Dataset:
        wanted = [t for t, nets in enumerate(self.networks) if set(nets) & set(networks)]
        return self.subset(np.isin(self.records.columns["task"], wanted))


def check_network_names(networks: Sequence[str], known: Sequence[str], option: str) -> list[str]:
    """``networks`` when each is ``known``; else a TclError naming the unknown and the known."""
    unknown = [n for n in networks if n not in known]
    if unknown:
        held = ", ".join(known) if known else "none (no collection manifest among the inputs)"
        raise TclError(f"{option}: no records of {', '.join(unknown)}; networks here: {held}")
    return list(networks)


def _manifests(paths: Sequence[str | Path]) -> dict[str, dict[str, object]]:
    tasks: dict[str, dict[str, object]] = {}
    for raw in paths:
        path = Path(raw)
        for manifest in (
            [path / "manifest.json", *path.glob("*/manifest.json")] if path.is_dir() else []
        ):
            if manifest.exists():
                for key, entry in json.loads(manifest.read_text()).get("tasks", {}).items():
                    _merge_task(tasks.setdefault(key, {}), entry)
    return tasks


def _merge_task(into: dict[str, object], entry: dict[str, object]) -> None:
    """One task's entry from several manifests: each collection lists only the networks it
    collected for (a search store, the training networks), so a task's networks are the union
    of theirs; dropping one would let a held-out network's task into training."""
    networks = {**dict(into.get("networks", {})), **dict(entry.get("networks", {}))}  # type: ignore[call-overload]
    into.update(entry)
    into["networks"] = networks


def load_dataset(
    paths: str | Path | Sequence[str | Path],
    *,
    measured_only: bool = True,
    tokenizer: TokenizerConfig | None = None,
    vocab: Vocab | None = None,
    progress: bool = False,
) -> Dataset:
    """Reads records (tcl.read_records) and the manifests of the collection directories among
    ``paths``; ``measured_only`` drops failed and unmeasured records."""
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    rs = read_records(items, tokenizer=tokenizer, vocab=vocab, progress=progress)
    if measured_only:
        rs = rs.select(rs.columns["error"] == 0)
    manifest = _manifests(items)
    networks, names = [], []
    for t, key in enumerate(rs.tasks.workload_key):
        entry = manifest.get(key, {})
        networks.append({str(k): int(v) for k, v in dict(entry.get("networks", {})).items()})  # type: ignore[call-overload]
        names.append(str(entry.get("name", key)))
        if "flops" in entry:
            rs.tasks.flops[t] = float(entry["flops"])  # type: ignore[arg-type]
    return Dataset(rs, networks, names)
