"""Fits the XGB over MetaSchedule's program features shipped in the package
(python/tcl/data/prior_xgb_cpu.ubj.gz, :mod:`tcl.integrations.tvm.prior_xgb`) on collected records:
every program of a training network's task (the held-out networks' tasks are left out, even
those a training network shares), random and search-drawn, of every platform directory given.
Prints one JSON line with the fit's figures.

Each record is replayed through TVM (its trace applied to its workload) and featurized by
MetaSchedule's ``per-store-feature`` extractor, as during tuning; a program's label is its task's
best cost on its platform over its own. Replaying is most of the time (tens of records a second):
``--features DIR`` keeps each store's features there, so that a second fit (other settings) or
a run cut short starts from what was done, and two processes can featurize two stores at once.

Usage: python scripts/fit_prior_xgb.py STORE [STORE ...] [--out PATH] [--features DIR]
       [--max-depth 10] [--rounds 40] [--eta 0.2] [--validate STORE] [--featurize-only]

``--validate STORE`` scores the fit on another store's programs (another host's search-drawn
programs of training networks, say: not the held-out networks the benchmarks judge it on): per
task, the best cost over the best cost among the fit's top ``k`` picks, averaged over tasks
(``top1``, ``top2``, ``top4``; ``random``: the same of a uniform pick, 20 draws), as
``bench/bench_learning.py``'s first round scores a pick.

A STORE is a collection directory holding database_tuning_record.json.gz (a platform's random
store, or its search/ store).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def featurize(store: str) -> dict[str, np.ndarray]:
    """``prior_xgb.featurize`` of ``store``'s records of training networks' tasks."""
    from tcl import zoo
    from tcl.integrations.tvm.prior_xgb import featurize as featurize_records
    from tcl.records.dataset import load_dataset

    return featurize_records(load_dataset([store]).without_networks(list(zoo.HELD_OUT)).records)


def cached_features(store: str, cache: Path | None) -> dict[str, np.ndarray]:
    """``featurize(store)``, kept in ``cache`` under a name of the store's path and records."""
    if cache is None:
        return featurize(store)
    resolved = Path(store).resolve()
    records = resolved / "database_tuning_record.json.gz"
    key = hashlib.sha256(str(resolved).encode() + records.read_bytes()).hexdigest()
    path = cache / f"{resolved.parent.name}-{resolved.name}-{key[:16]}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as kept:
            return {k: kept[k] for k in kept.files}
    began = time.time()
    features = featurize(store)
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **features)
    print(f"{store}: {len(features['costs'])} programs featurized in {time.time() - began:.0f} s")
    return features


def pick_scores(scores: np.ndarray, features: dict[str, np.ndarray], k: int) -> float:
    """The mean over tasks of the best cost over the best cost of the ``k`` best-scored."""
    costs, groups = features["costs"], features["groups"]
    found = []
    for task in np.unique(groups):
        rows = np.flatnonzero(groups == task)
        picked = rows[np.argsort(-scores[rows], kind="stable")[:k]]
        found.append(costs[rows].min() / costs[picked].min())
    return round(float(np.mean(found)), 4)


def validation(booster: object, features: dict[str, np.ndarray]) -> dict[str, object]:
    """:func:`pick_scores` of the fit's picks and of uniform ones, at 1, 2 and 4 picks."""
    from tcl.integrations.tvm.prior_xgb import booster_scores, programs

    scores = booster_scores(booster, programs(features))
    rng = np.random.default_rng(0)
    draws = [rng.random(len(scores)) for _ in range(20)]
    out: dict[str, object] = {f"top{k}": pick_scores(scores, features, k) for k in (1, 2, 4)}
    out["random"] = {
        f"top{k}": round(float(np.mean([pick_scores(d, features, k) for d in draws])), 4)
        for k in (1, 2, 4)
    }
    out["programs_per_task"] = round(len(scores) / len(np.unique(features["groups"])), 1)
    return out


def main() -> None:
    from tcl.integrations.tvm.prior_xgb import fit_booster, programs, save_booster, task_labels

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+", help="collection directories")
    parser.add_argument("--out", default=str(ROOT / "python/tcl/data/prior_xgb_cpu.ubj.gz"))
    parser.add_argument("--features", type=Path, help="directory keeping each store's features")
    parser.add_argument("--max-depth", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=40, help="trees (the size is about linear)")
    parser.add_argument("--eta", type=float, default=0.2)
    parser.add_argument("--validate", help="a store to score the fit on (not fitted on)")
    parser.add_argument("--featurize-only", action="store_true")
    args = parser.parse_args()

    xs: list[np.ndarray] = []
    ys, tasks = [], 0
    for store in args.stores:
        f = cached_features(store, args.features)
        xs.extend(programs(f))
        ys.append(task_labels(f["costs"], f["groups"]))
        tasks += len(np.unique(f["groups"]))
    held = cached_features(args.validate, args.features) if args.validate else None
    if args.featurize_only:
        return
    params = {"max_depth": args.max_depth, "gamma": 0.001, "min_child_weight": 0, "eta": args.eta}
    params |= {"seed": 43, "nthread": 2, "verbosity": 0}
    began = time.time()
    booster = fit_booster(xs, np.concatenate(ys), params, args.rounds)
    size = save_booster(booster, args.out)
    print(
        json.dumps(
            {
                "script": "fit_prior_xgb",
                "stores": args.stores,
                "programs": len(xs),
                "tasks": tasks,
                "trees": booster.num_boosted_rounds(),
                "max_depth": args.max_depth,
                "eta": args.eta,
                "bytes": size,
                "fit_s": round(time.time() - began, 1),
                "validate": args.validate,
                "validation": validation(booster, held) if held else None,
                "out": args.out,
                "python": platform.python_version(),
            }
        )
    )


if __name__ == "__main__":
    main()
