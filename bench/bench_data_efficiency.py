"""How much measured data a cost model needs when the RDU sampler picks it, against random,
diversity-only and uncertainty-only picks, on the committed measured data of one platform.

Each training task's measured programs are its pool. For every fraction of each pool, a strategy
chooses the programs; a Mamba model is trained on them alone (fixed steps, same seed, no
validation) and scored on the held-out networks, whose records none of the strategies sees.

- random: a uniform sample of each task's pool.
- diversity: greedy k-center on the fixed token featurisation (no model needed).
- uncertainty: half the budget at random, a model trained on it, the rest by its MC-dropout
  disagreement (largest first).
- rdu: half the budget by representativeness + diversity on token features, a model trained on
  it, the rest by the full RDU score in that model's embedding space with its uncertainty (two
  active-learning rounds, as `tcl active` runs them).

Prints one JSON line {"top1": {strategy: {fraction: score}}, "top5": {...}, ...} and writes a PNG
of top-1 against the fraction. Usage:
python bench/bench_data_efficiency.py [DATA_DIR] [--steps 300] [--png bench/data_efficiency.png]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import machine

from tcl import sampler, zoo
from tcl.dataset import Dataset, load_dataset
from tcl.metrics import evaluate
from tcl.model import ModelConfig
from tcl.train import TrainConfig, predict, train

FRACTIONS = (0.05, 0.1, 0.2, 0.5)
STRATEGIES = ("rdu", "random", "diversity", "uncertainty")


def fit(data: Dataset, rows: np.ndarray, steps: int, vocab_size: int) -> Any:
    net, _ = train(
        data.subset(_mask(len(data.records), rows)),
        None,
        ModelConfig(arch="mamba", vocab_size=vocab_size),
        TrainConfig(max_steps=steps, warmup_steps=min(50, steps // 5)),
        log=lambda *a: None,
    )
    return net


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


def random_pick(tasks: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    chosen = []
    for t in np.unique(tasks):
        rows = np.flatnonzero(tasks == t)
        chosen.append(rng.choice(rows, int(np.ceil(fraction * len(rows))), replace=False))
    return np.sort(np.concatenate(chosen))


def choose(
    strategy: str,
    data: Dataset,
    fraction: float,
    features: np.ndarray,
    steps: int,
    vocab_size: int,
) -> np.ndarray:
    rs = data.records
    tasks = rs.columns["task"]
    rng = np.random.default_rng(0)
    if strategy == "random":
        return random_pick(tasks, fraction, rng)
    if strategy == "diversity":
        weights = sampler.RDUWeights(representativeness=0.0, diversity=1.0, uncertainty=0.0)
        return sampler.select_per_task(features, tasks, fraction, weights=weights)
    # Two rounds: a seed of half the budget, a model trained on it, then the rest.
    if strategy == "uncertainty":
        seed = random_pick(tasks, fraction / 2, rng)
    else:
        seed = sampler.select_per_task(
            features, tasks, fraction / 2, weights=sampler.RDUWeights(uncertainty=0.0)
        )
    model = fit(data, seed, steps // 2, vocab_size)
    spread = sampler.model_uncertainty(model, rs)
    measured = _mask(len(rs), seed)
    if strategy == "uncertainty":
        weights = sampler.RDUWeights(representativeness=0.0, diversity=0.0, uncertainty=1.0)
        points = features
    else:
        weights = sampler.RDUWeights()
        points = sampler.model_embeddings(model, rs)
    more = sampler.select_per_task(
        points, tasks, fraction, uncertainty=spread, weights=weights, measured=measured
    )
    return np.union1d(seed, more)


def plot(top1: dict[str, dict[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for strategy, points in top1.items():
        xs = [float(f) for f in points]
        ax.plot(xs, list(points.values()), marker="o", label=strategy)
    ax.set_xscale("log")
    ax.set_xlabel("fraction of each task's programs measured")
    ax.set_ylabel("held-out top-1")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", default=None)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--png", type=Path, default=Path(__file__).parent / "data_efficiency.png")
    args = parser.parse_args()
    torch.manual_seed(0)
    root = Path(__file__).resolve().parent.parent / "data"
    source = args.data or str(max(root.glob("cpu-avx2-1t-*"), default=next(root.glob("*"))))
    data = load_dataset(source)
    holdout = [n for n in zoo.HELD_OUT if n in data.network_names()]
    pool = data.without_networks(holdout)
    test = data.of_networks(holdout)
    vocab_size = len(data.records.vocab)
    features = sampler.token_features(pool.records)
    top1: dict[str, dict[str, float]] = {s: {} for s in STRATEGIES}
    top5: dict[str, dict[str, float]] = {s: {} for s in STRATEGIES}
    seconds: dict[str, float] = {}
    start = time.time()
    full = evaluate(
        test,
        predict(fit(pool, np.arange(len(pool.records)), args.steps, vocab_size), test.records),
        holdout,
    )
    seconds["1.0"] = round(time.time() - start, 1)
    for strategy in STRATEGIES:
        for fraction in FRACTIONS:
            start = time.time()
            rows = choose(strategy, pool, fraction, features, args.steps, vocab_size)
            scores = evaluate(
                test, predict(fit(pool, rows, args.steps, vocab_size), test.records), holdout
            )
            top1[strategy][str(fraction)] = round(float(scores["top1"]), 4)  # type: ignore[arg-type]
            top5[strategy][str(fraction)] = round(float(scores["top5"]), 4)  # type: ignore[arg-type]
            seconds[f"{strategy}@{fraction}"] = round(time.time() - start, 1)
        top1[strategy]["1.0"] = round(float(full["top1"]), 4)  # type: ignore[arg-type]
        top5[strategy]["1.0"] = round(float(full["top5"]), 4)  # type: ignore[arg-type]
    plot(top1, args.png, f"{Path(source).name}: held-out {', '.join(holdout)}")
    rdu10, full1, random10 = top1["rdu"]["0.1"], top1["rdu"]["1.0"], top1["random"]["0.1"]
    print(
        json.dumps(
            {
                "top1": top1,
                "top5": top5,
                "rdu_0.1_over_full": round(rdu10 / full1, 4) if full1 else None,
                "rdu_0.1_minus_random_0.1": round(rdu10 - random10, 4),
                "pool_records": len(pool.records),
                "pool_tasks": len(np.unique(pool.records.columns["task"])),
                "test_records": len(test.records),
                "holdout": holdout,
                "steps": args.steps,
                "seconds": seconds,
                "data": source,
                "png": str(args.png),
                "torch_threads": torch.get_num_threads(),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
