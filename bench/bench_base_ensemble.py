"""Held-out accuracy of base-model checkpoints alone and averaged: the question whether the
tuner should score with K models instead of one.

Each checkpoint (scripts/train_base_model.py, one per seed) scores the held-out networks'
records of every platform in DATA. The ensemble scores a program two ways: by its mean rank
within its task across the models (what bench_accuracy_sweep's ``ensemble=K`` does), and by the
mean of each model's score standardized with that model's mean and deviation over the training
records: tcl.model.ensemble.Ensemble, as ``train_base_model --members`` saves it, which needs no
task grouping, so a program's score does not depend on its batch (what a MetaSchedule cost
model must give; only for single models of one shape). Prints one JSON line: pooled top-1 /
top-5 and top-1 per platform and per network.

Usage: python bench/bench_base_ensemble.py CKPT [CKPT ...] [--data data]
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tcl import model, zoo
from tcl.model.ensemble import Ensemble
from tcl.model.inputs import calibrated_ensemble, predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.training.metrics import evaluate, ranks_within_tasks

ROOT = Path(__file__).resolve().parent.parent


def figures(test: Dataset, scores: np.ndarray, held_out: list[str]) -> dict[str, Any]:
    pooled: dict[str, Any] = evaluate(test, scores, held_out)
    target = test.records.columns["target"]
    per_platform = {}
    for t in sorted(set(target.tolist())):
        one: dict[str, Any] = evaluate(test.subset(target == t), scores[target == t], held_out)
        per_platform[test.records.targets[t]] = round(one["top1"], 4)
    return {
        "top1": round(pooled["top1"], 4),
        "top5": round(pooled["top5"], 4),
        "per_platform_top1": per_platform,
        "per_network_top1": {n: round(v["top1"], 4) for n, v in pooled["per_network"].items()},
    }


def standardized_ensemble(nets: list[Any], training: Any) -> Ensemble | None:
    """The checkpoints as one :class:`Ensemble`, calibrated on the training records as
    ``train_base_model --members`` does; None unless they are single models of one shape."""
    configs = {net.config for net in nets}
    if len(nets) < 2 or len(configs) > 1 or next(iter(configs)).members != 1:
        return None
    return calibrated_ensemble(nets, training)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    args = parser.parse_args()
    platforms = sorted(p for p in args.data.iterdir() if (p / "manifest.json").exists())
    data = load_dataset(platforms)
    held_out = [n for n in zoo.HELD_OUT if n in data.network_names()]
    test = data.of_networks(held_out)
    task = test.records.columns["task"]
    nets, single = [], {}
    by_rank = np.zeros(len(test.records))
    for path in args.checkpoints:
        net, vocab, _, _ = model.load(path)
        if vocab.kinds != data.records.vocab.kinds:
            raise SystemExit(f"{path}: its vocabulary is not the dataset's")
        scores = predict(net, test.records)
        single[str(path)] = figures(test, scores, held_out)
        by_rank += ranks_within_tasks(scores, task)
        nets.append(net)
    training = data.without_networks(list(zoo.HELD_OUT)).records
    ensemble = standardized_ensemble(nets, training)
    out = {
        "checkpoints": single,
        "ensemble_mean_rank": figures(test, by_rank, held_out),
        "ensemble_mean_standardized_score": None
        if ensemble is None
        else figures(test, predict(ensemble, test.records), held_out),
        "test_records": len(test.records),
        "platforms": [p.name for p in platforms],
        "host": platform.processor() or platform.machine(),
        "torch": str(torch.__version__),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
