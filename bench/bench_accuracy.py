"""Held-out accuracy of every cost model on the same measured records, in one run.

Trains tcl's Mamba, the TLP-style attention model and the LSTM (same tokens, same harness,
lambdarank), and MetaSchedule's MLP (the TenSet-MLP port) and XGB (on their own features,
replayed through TVM), on the records of the training networks of one platform; scores the
held-out networks' records (never seen in training, not even through a shared task). Each
sequence model is also scored beside XGB (``mamba+xgb``: the two models' ranks within each task,
summed): whether the schedule tokens and MetaSchedule's features know different things. The
packaged pre-fitted XGB (``xgb-prior``, ``tcl.integrations.tvm.prior_xgb``; fitted beforehand on
the training networks' tasks of every committed CPU store, none of these held-out networks) scores
the same records as it ships, untrained here, and so does the packaged base model (``shipped``).
Prints one JSON line: {"top1": {...}, "top5": {...}, "per_network": {...}, "pairwise": {...}, ...}.

Usage: python bench/bench_accuracy.py DATA_DIR [--steps 600] [--holdout a,b] [--seed 0]
       [--train-networks a,b]   # train on these networks' tasks only (an ablation of the data)
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from _common import machine, training_data

from tcl import zoo
from tcl.model import ModelConfig, parameter_bytes
from tcl.model.inputs import predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.records.splits import split_within_task
from tcl.training.metrics import evaluate, ranks_within_tasks
from tcl.training.train import TrainConfig, train

SEQUENCE_MODELS = ("mamba", "attention", "lstm")  # trained on the same tokens, same harness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--holdout", default=",".join(zoo.HELD_OUT))
    parser.add_argument("--skip", default="", help="comma-separated models to leave out")
    parser.add_argument("--seed", type=int, default=0, help="the sequence models' training seed")
    parser.add_argument(
        "--train-networks", default="", help="comma-separated; default: every non-held-out one"
    )
    args = parser.parse_args()
    data = load_dataset(args.data)
    holdout = [n for n in args.holdout.split(",") if n in data.network_names()]
    training = training_data(data, holdout, args.train_networks)
    test = data.of_networks(holdout)
    fit, val = split_within_task(training.records, 0.2, seed=0)
    fit_data, val_data = (
        Dataset(fit, data.networks, data.names),
        Dataset(val, data.networks, data.names),
    )
    skip = set(args.skip.split(","))
    results: dict[str, dict[str, object]] = {}
    scores: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    for arch in SEQUENCE_MODELS:
        if arch in skip:
            continue
        start = time.time()
        config = ModelConfig(arch=arch, vocab_size=len(data.records.vocab))
        net, _ = train(
            fit_data,
            val_data,
            config,
            TrainConfig(max_steps=args.steps, seed=args.seed),
            log=lambda *a: None,
        )
        scores[arch] = predict(net, test.records)
        results[arch] = evaluate(test, scores[arch], holdout)
        results[arch]["bytes"] = parameter_bytes(net)
        seconds[arch] = round(time.time() - start, 1)
    from tcl.integrations.tvm import baselines

    for kind, name in (("mlp", "ms_mlp"), ("xgb", "xgb")):
        if name in skip:
            continue
        start = time.time()
        scores[name] = baselines.scores(kind, training.records, test.records)
        results[name] = evaluate(test, scores[name], holdout)
        seconds[name] = round(time.time() - start, 1)
    if "shipped" not in skip:
        from tcl import model

        shipped = model.base_model_path()
        net, vocab, _, _ = model.load(shipped)
        if vocab.kinds != data.records.vocab.kinds:
            raise SystemExit(f"{shipped}: its vocabulary is not {args.data}'s")
        scores["shipped"] = predict(net, test.records)
        results["shipped"] = evaluate(test, scores["shipped"], holdout)
    if "xgb-prior" not in skip:
        from tcl.integrations.tvm import prior_xgb

        start = time.time()
        booster = prior_xgb.load_booster(prior_xgb.prior_xgb_path())
        scores["xgb-prior"] = prior_xgb.record_scores(booster, test.records)
        results["xgb-prior"] = evaluate(test, scores["xgb-prior"], holdout)
        seconds["xgb-prior"] = round(time.time() - start, 1)  # featurizing; nothing is trained
    task = test.records.columns["task"]
    for arch in SEQUENCE_MODELS:
        if arch in scores and "xgb" in scores:
            both = ranks_within_tasks(scores[arch], task) + ranks_within_tasks(scores["xgb"], task)
            results[f"{arch}+xgb"] = evaluate(test, both, holdout)
    rng = np.random.default_rng(0)
    results["random"] = evaluate(test, rng.random(len(test.records)), holdout)
    print(
        json.dumps(
            {
                "top1": {k: round(float(v["top1"]), 4) for k, v in results.items()},  # type: ignore[arg-type]
                "top5": {k: round(float(v["top5"]), 4) for k, v in results.items()},  # type: ignore[arg-type]
                "pairwise": {
                    k: round(float(v["pairwise_accuracy"]), 4)  # type: ignore[arg-type]
                    for k, v in results.items()
                },
                "per_network": {k: v["per_network"] for k, v in results.items()},
                "train_seconds": seconds,
                "holdout": holdout,
                "training_networks": training.networks_with_records(),
                "seed": args.seed,
                "train_records": len(training.records),
                "test_records": len(test.records),
                "steps": args.steps,
                "data": args.data,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
