"""How much measured data a cost model needs when the RDU sampler picks it, against random,
diversity-only and uncertainty-only picks, on the committed measured data of one platform.

Each training task's measured programs are its pool. For every fraction of each pool, a strategy
chooses the programs; a Mamba model is trained on them alone (fixed steps, same seed, no
validation) and scored on the held-out networks, whose records none of the strategies sees.

Two settings (``--mode``):
- ``transfer`` (the default; tcl's use: a new platform, an existing model): a source model
  trained on another platform's training networks (``--source``, default cpu-native-2t) gives
  the embedding space and the uncertainty from the first pick, and every model is the source
  model fine-tuned on the picked records (100% = fine-tuned on every record).
- ``scratch``: no model at first; the first round works on a fixed token featurisation and
  every model is trained from random weights.

Strategies:
- random: a uniform sample of each task's pool.
- diversity: greedy k-center (in the source model's space; in scratch mode on token features).
- uncertainty: half the budget (at random in scratch mode; by the source model's MC-dropout
  disagreement in transfer mode), a model trained on it, the rest by its disagreement.
- rdu: half the budget by the RDU score (in scratch mode without uncertainty, on token
  features), a model trained on it, the rest by the full RDU score in that model's embedding
  space with its uncertainty (two active-learning rounds, as `tcl active` runs them).
- ``--rdu-weights R:D:U`` (repeatable) adds rdu[R:D:U] with those weights, for weight sweeps.

Every figure is the mean over ``--seeds`` runs (each seed changes the random picks, the model
initialisation and the batches). Prints one JSON line {"top1": {strategy: {fraction: score}},
"top5": {...}, ...} and writes a PNG of top-1 against the fraction. Usage:
python bench/bench_data_efficiency.py [DATA_DIR] [--mode transfer|scratch] [--steps 300]
    [--seeds 3] [--fractions 0.05,0.1,...] [--strategies rdu,random,...] [--png PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import machine
from torch import nn

from tcl import zoo
from tcl.model import ModelConfig
from tcl.model.inputs import predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.sampling import sampler
from tcl.training.metrics import evaluate
from tcl.training.train import TrainConfig, train

FRACTIONS = (0.05, 0.1, 0.2, 0.5)
STRATEGIES = ("rdu", "random", "diversity", "uncertainty")


@dataclass
class Bench:
    """The pool, the test set and how models are made in the chosen mode."""

    pool: Dataset
    test: Dataset
    holdout: list[str]
    config: ModelConfig
    steps: int
    source: nn.Module | None  # transfer mode: fine-tune from this; else from scratch

    def fit(self, rows: np.ndarray, seed: int, steps: int | None = None) -> Any:
        net, _ = train(
            self.pool.subset(_mask(len(self.pool.records), rows)),
            None,
            self.config,
            TrainConfig(
                max_steps=steps or self.steps, warmup_steps=min(30, self.steps // 5), seed=seed
            ),
            init=self.source,
            log=lambda *a: None,
        )
        return net

    def score(self, net: Any) -> dict[str, float]:
        return evaluate(self.test, predict(net, self.test.records), self.holdout)  # type: ignore[return-value]


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


def parse_weights(strategy: str) -> sampler.RDUWeights:
    if strategy == "rdu":
        return sampler.RDUWeights()
    r, d, u = (float(v) for v in strategy[len("rdu[") : -1].split(":"))
    return sampler.RDUWeights(representativeness=r, diversity=d, uncertainty=u)


def choose(
    strategy: str, bench: Bench, fraction: float, features: np.ndarray, seed: int
) -> np.ndarray:
    rs = bench.pool.records
    tasks = rs.columns["task"]
    rng = np.random.default_rng(seed)
    source = bench.source
    points0 = features if source is None else sampler.model_embeddings(source, rs)
    if strategy == "random":
        return random_pick(tasks, fraction, rng)
    if strategy == "diversity":
        weights = sampler.RDUWeights(representativeness=0.0, diversity=1.0, uncertainty=0.0)
        return sampler.select_per_task(points0, tasks, fraction, weights=weights)
    # Two rounds: a seed of half the budget, a model trained on it, then the rest.
    only_uncertainty = sampler.RDUWeights(representativeness=0.0, diversity=0.0, uncertainty=1.0)
    spread0 = None if source is None else sampler.model_uncertainty(source, rs, seed=seed)
    if strategy == "uncertainty":
        if source is None:
            first = random_pick(tasks, fraction / 2, rng)
        else:
            first = sampler.select_per_task(
                points0, tasks, fraction / 2, uncertainty=spread0, weights=only_uncertainty
            )
        weights = only_uncertainty
    else:
        weights = parse_weights(strategy)
        first_weights = weights if source is not None else replace(weights, uncertainty=0.0)
        first = sampler.select_per_task(
            points0, tasks, fraction / 2, uncertainty=spread0, weights=first_weights
        )
    model = bench.fit(first, seed, bench.steps // 2)
    spread = sampler.model_uncertainty(model, rs, seed=seed)
    measured = _mask(len(rs), first)
    points = features if strategy == "uncertainty" else sampler.model_embeddings(model, rs)
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
    parser.add_argument("--mode", choices=("transfer", "scratch"), default="transfer")
    parser.add_argument("--source", default=None, help="transfer mode's source platform data")
    parser.add_argument("--source-steps", type=int, default=600)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seeds", type=int, default=3, help="runs averaged (picks and training)")
    parser.add_argument("--fractions", default=",".join(map(str, FRACTIONS)))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--rdu-weights", action="append", default=[], metavar="R:D:U")
    parser.add_argument("--png", type=Path, default=Path(__file__).parent / "data_efficiency.png")
    args = parser.parse_args()
    torch.manual_seed(0)
    root = Path(__file__).resolve().parent.parent / "data"
    target_dir = args.data or str(max(root.glob("cpu-avx2-1t-*"), default=next(root.glob("*"))))
    fractions = [float(f) for f in args.fractions.split(",")]
    strategies = [*args.strategies.split(","), *(f"rdu[{w}]" for w in args.rdu_weights)]
    start = time.time()
    if args.mode == "transfer":
        source_dir = args.source or str(next(root.glob("cpu-native-2t-*")))
        both = load_dataset([target_dir, source_dir])  # one vocabulary for both platforms
        vocab, tokenizer = both.records.vocab.freeze(), both.records.tokenizer
        data = load_dataset(target_dir, vocab=vocab, tokenizer=tokenizer)
        source_data = load_dataset(source_dir, vocab=vocab, tokenizer=tokenizer)
        config = ModelConfig(arch="mamba", vocab_size=len(vocab))
        source, _ = train(
            source_data.without_networks(list(zoo.HELD_OUT)),
            None,
            config,
            TrainConfig(max_steps=args.source_steps),
            log=lambda *a: None,
        )
    else:
        source_dir, data, source = None, load_dataset(target_dir), None
        config = ModelConfig(arch="mamba", vocab_size=len(data.records.vocab))
    holdout = [n for n in zoo.HELD_OUT if n in data.network_names()]
    bench = Bench(
        data.without_networks(holdout),
        data.of_networks(holdout),
        holdout,
        config,
        args.steps,
        source,
    )
    features = sampler.token_features(bench.pool.records)
    runs: dict[str, dict[str, list[dict[str, float]]]] = {s: {} for s in strategies}
    seconds: dict[str, float] = {"setup": round(time.time() - start, 1)}
    source_score = bench.score(source) if source is not None else None
    for seed in range(args.seeds):
        start = time.time()
        full = bench.score(bench.fit(np.arange(len(bench.pool.records)), seed))
        seconds[f"1.0/{seed}"] = round(time.time() - start, 1)
        for strategy in strategies:
            runs[strategy].setdefault("1.0", []).append(full)
            for fraction in fractions:
                start = time.time()
                rows = choose(strategy, bench, fraction, features, seed)
                result = bench.score(bench.fit(rows, seed))
                runs[strategy].setdefault(str(fraction), []).append(result)
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
    name = Path(target_dir).name.rsplit("-", 1)[0]
    plot(top1, args.png, f"{name}, {args.mode}, {args.seeds} seed(s)")
    summary: dict[str, Any] = {"top1": top1, "top5": top5}
    if "rdu" in top1 and "0.1" in top1["rdu"]:
        rdu10, full1 = top1["rdu"]["0.1"], top1["rdu"]["1.0"]
        summary["rdu_0.1_over_full"] = round(rdu10 / full1, 4) if full1 else None
        if "random" in top1:
            summary["rdu_0.1_minus_random_0.1"] = round(rdu10 - top1["random"]["0.1"], 4)
    print(
        json.dumps(
            {
                **summary,
                "mode": args.mode,
                "source": source_dir,
                "source_top1": None if source_score is None else round(source_score["top1"], 4),
                "rdu_weights_default": asdict(sampler.RDUWeights()),
                "pool_records": len(bench.pool.records),
                "pool_tasks": len(np.unique(bench.pool.records.columns["task"])),
                "test_records": len(bench.test.records),
                "holdout": holdout,
                "steps": args.steps,
                "seeds": args.seeds,
                "top1_per_seed": {
                    s: {f: [round(float(r["top1"]), 4) for r in rs] for f, rs in by.items()}
                    for s, by in runs.items()
                },
                "seconds": seconds,
                "data": target_dir,
                "png": str(args.png),
                "torch_threads": torch.get_num_threads(),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
