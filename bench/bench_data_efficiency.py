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

Every figure is the mean over ``--seeds`` runs (each seed changes the random picks, the model
initialisation and the batches). Prints one JSON line {"top1": {strategy: {fraction: score}},
"top5": {...}, ...} and writes a PNG of top-1 against the fraction. Usage:
python bench/bench_data_efficiency.py [DATA_DIR] [--steps 400] [--seeds 3] [--png PATH]
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


def fit(data: Dataset, rows: np.ndarray, steps: int, vocab_size: int, seed: int) -> Any:
    net, _ = train(
        data.subset(_mask(len(data.records), rows)),
        None,
        ModelConfig(arch="mamba", vocab_size=vocab_size),
        TrainConfig(max_steps=steps, warmup_steps=min(50, steps // 5), seed=seed),
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
    seed: int,
) -> np.ndarray:
    rs = data.records
    tasks = rs.columns["task"]
    rng = np.random.default_rng(seed)
    if strategy == "random":
        return random_pick(tasks, fraction, rng)
    if strategy == "diversity":
        weights = sampler.RDUWeights(representativeness=0.0, diversity=1.0, uncertainty=0.0)
        return sampler.select_per_task(features, tasks, fraction, weights=weights)
    # Two rounds: a seed of half the budget, a model trained on it, then the rest.
    if strategy == "uncertainty":
        first = random_pick(tasks, fraction / 2, rng)
    else:
        first = sampler.select_per_task(
            features, tasks, fraction / 2, weights=sampler.RDUWeights(uncertainty=0.0)
        )
    model = fit(data, first, steps // 2, vocab_size, seed)
    spread = sampler.model_uncertainty(model, rs, seed=seed)
    measured = _mask(len(rs), first)
    if strategy == "uncertainty":
        weights = sampler.RDUWeights(representativeness=0.0, diversity=0.0, uncertainty=1.0)
        points = features
    else:
        weights = sampler.RDUWeights()
        points = sampler.model_embeddings(model, rs)
    more = sampler.select_per_task(
        points, tasks, fraction, uncertainty=spread, weights=weights, measured=measured
    )
    return np.union1d(first, more)


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
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seeds", type=int, default=3, help="runs averaged (picks and training)")
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
    runs: dict[str, dict[str, list[dict[str, float]]]] = {s: {} for s in STRATEGIES}
    seconds: dict[str, float] = {}
    for seed in range(args.seeds):
        start = time.time()
        everything = fit(pool, np.arange(len(pool.records)), args.steps, vocab_size, seed)
        full = evaluate(test, predict(everything, test.records), holdout)
        seconds[f"1.0/{seed}"] = round(time.time() - start, 1)
        for strategy in STRATEGIES:
            runs[strategy].setdefault("1.0", []).append(full)  # type: ignore[arg-type]
            for fraction in FRACTIONS:
                start = time.time()
                rows = choose(strategy, pool, fraction, features, args.steps, vocab_size, seed)
                net = fit(pool, rows, args.steps, vocab_size, seed)
                result = evaluate(test, predict(net, test.records), holdout)
                runs[strategy].setdefault(str(fraction), []).append(result)  # type: ignore[arg-type]
                seconds[f"{strategy}@{fraction}/{seed}"] = round(time.time() - start, 1)

    def mean(metric: str) -> dict[str, dict[str, float]]:
        return {
            s: {
                f: round(float(np.mean([r[metric] for r in results])), 4)
                for f, results in sorted(by_fraction.items(), key=lambda kv: float(kv[0]))
            }
            for s, by_fraction in runs.items()
        }

    top1, top5 = mean("top1"), mean("top5")
    plot(top1, args.png, f"{Path(source).name.rsplit('-', 1)[0]}, {args.seeds} seed(s)")
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
                "seeds": args.seeds,
                "top1_per_seed": {
                    s: {f: [round(float(r["top1"]), 4) for r in rs] for f, rs in by.items()}  # type: ignore[arg-type]
                    for s, by in runs.items()
                },
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
