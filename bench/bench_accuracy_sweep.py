"""Why does the sequence model trail XGB on held-out networks? tcl's Mamba trained under several
shapes and schedules on the same split as ``bench_accuracy.py`` (training networks of one
platform, validation within their tasks, the held-out networks scored), in parallel processes.

Each variant is ``key=value`` pairs over ModelConfig and TrainConfig fields (``steps`` is
``max_steps``), e.g. ``d_model=128,n_layers=4,steps=2000,seed=1``, ``val=task`` to
validate (and stop early) on whole tasks held out of training rather than on programs held
out within every task, and ``ensemble=K`` to score by the mean within-task rank of K models
(seeds seed..seed+K-1). Each finished variant is
appended to OUT (JSON lines) as it ends, so that an interrupted sweep keeps what it finished;
the last line printed is one JSON object with every variant's pooled held-out top-1/top-5,
per-network top-1, training steps taken and seconds. The baselines (XGB, TenSet-MLP) need TVM
and come from ``bench_accuracy.py`` on the same data.

Usage: python bench/bench_accuracy_sweep.py DATA_DIR VARIANT [VARIANT ...] [--jobs 4]
       [--threads 1] [--out bench/out/accuracy_sweep.jsonl] [--train-networks a,b]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def parse_variant(text: str) -> dict[str, Any]:
    from tcl.model import ModelConfig
    from tcl.training.train import TrainConfig

    known = {f.name: f.type for c in (ModelConfig, TrainConfig) for f in fields(c)}
    known["val"] = "str"
    known["ensemble"] = "int"
    out: dict[str, Any] = {}
    for pair in filter(None, text.split(",")):
        key, _, value = pair.partition("=")
        key = "max_steps" if key == "steps" else key
        if key not in known:
            raise SystemExit(f"unknown field {key!r} in variant {text!r}")
        out[key] = (
            value
            if known[key] == "str"
            else float(value)
            if "." in value or "e" in value
            else int(value)
        )
    return out


def run_variant(data_dir: str, variant: str, threads: int, train_networks: str) -> dict[str, Any]:
    import torch
    from _common import training_data

    torch.set_num_threads(threads)
    from tcl import zoo
    from tcl.model import ModelConfig
    from tcl.model.inputs import predict
    from tcl.records.dataset import Dataset, load_dataset
    from tcl.records.splits import split_by_task, split_within_task
    from tcl.training.metrics import evaluate, ranks_within_tasks
    from tcl.training.train import TrainConfig, train

    data = load_dataset(data_dir)
    holdout = [n for n in zoo.HELD_OUT if n in data.network_names()]
    settings = parse_variant(variant)
    ensemble = int(settings.pop("ensemble", 1))
    split = split_by_task if settings.pop("val", "within") == "task" else split_within_task
    training = training_data(data, holdout, train_networks)
    fit, val = split(training.records, 0.2, seed=0)
    fit_data, val_data = (
        Dataset(fit, data.networks, data.names),
        Dataset(val, data.networks, data.names),
    )
    test = data.of_networks(holdout)
    model_keys = {f.name for f in fields(ModelConfig)}
    config = ModelConfig(
        vocab_size=len(data.records.vocab), **{k: v for k, v in settings.items() if k in model_keys}
    )
    train_config = TrainConfig(
        **{"max_steps": 600, **{k: v for k, v in settings.items() if k not in model_keys}}
    )
    start = time.time()
    # ensemble=K: K models of seeds seed..seed+K-1, each program scored by its mean rank within
    # its task across them (scores of separately trained models are on different scales).
    scores = np.zeros(len(test.records))
    for k in range(ensemble):
        seeded = dataclasses.replace(train_config, seed=train_config.seed + k)
        net, history = train(fit_data, val_data, config, seeded, log=lambda *a: None)
        scores += ranks_within_tasks(predict(net, test.records), test.records.columns["task"])
    result = evaluate(test, scores, holdout)
    return {
        "variant": variant,
        "training_networks": training.networks_with_records(),
        "top1": round(float(result["top1"]), 4),  # type: ignore[arg-type]
        "top5": round(float(result["top5"]), 4),  # type: ignore[arg-type]
        "per_network_top1": {
            n: round(float(v["top1"]), 4)
            for n, v in result["per_network"].items()  # type: ignore[attr-defined]
        },
        "steps": history["steps"][-1]["step"] if history["steps"] else None,
        "best_val_top1": round(float(history["best_val_top1"]), 4),
        "seconds": round(time.time() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data")
    parser.add_argument("variants", nargs="+")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    parser.add_argument("--threads", type=int, default=1, help="torch threads per variant")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "accuracy_sweep.jsonl")
    parser.add_argument(
        "--train-networks", default="", help="comma-separated; default: every non-held-out one"
    )
    args = parser.parse_args()
    for v in args.variants:
        parse_variant(v)  # every variant checked before any training starts
    args.out.parent.mkdir(parents=True, exist_ok=True)
    results = []
    with ProcessPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(run_variant, args.data, v, args.threads, args.train_networks)
            for v in args.variants
        ]
        for future in as_completed(futures):
            results.append(future.result())
            with open(args.out, "a") as f:
                f.write(json.dumps(results[-1]) + "\n")
    from _common import machine

    print(
        json.dumps(
            {
                "benchmark": "accuracy_sweep",
                "data": args.data,
                "results": results,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
