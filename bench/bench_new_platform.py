"""The packaged base model moved to a new platform from a few measured programs: tcl's continual
distillation against fine-tuning, training from scratch and the model as it is, each scored on
pools of programs of held-out networks measured on that platform (a GPU's, say).

TRAIN is a collection directory of the new platform (``tcl collect``; its held-out networks are
left out). Every method learns from the same records: all of them with ``--fraction 1``, else
the RDU sampler's pick of that fraction of each task's records in the packaged model's
embedding space (tcl distill's pick). Each POOL is a directory of records of the same platform
(a ``tcl tune`` work directory, a collection); it is scored per task, since a pool names no
networks: the mean over its tasks of the best cost over the cost of the top-1 (top-5) pick, and
the share of program pairs ranked right. Random picks' expected top-1 is the mean over 2,000
random orders. Prints one JSON line.

Usage: python bench/bench_new_platform.py TRAIN POOL [POOL ...] [--model CKPT] [--fraction 1]
       [--steps 300] [--seeds 0,1,2]
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
from torch import nn

from tcl import model as models
from tcl import zoo
from tcl.model.inputs import predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.training import distill
from tcl.training.metrics import mean_task_topk, pairwise_accuracy
from tcl.training.train import TrainConfig, train
from tcl.tuning.platforms import records_descriptor


def random_top1(pool: Dataset) -> float:
    """The expected per-task top-1 of random picks on ``pool``: the mean over 2,000 orders."""
    rng = np.random.default_rng(0)
    n = len(pool.records)
    return round(float(np.mean([mean_task_topk(pool, rng.random(n)) for _ in range(2000)])), 4)


def score(net: nn.Module, pool: Dataset) -> dict[str, float]:
    """Per-task top-1 and top-5 and pairwise accuracy of ``net`` on ``pool``."""
    scores = predict(net, pool.records)
    return {
        "top1": round(mean_task_topk(pool, scores, 1), 4),
        "top5": round(mean_task_topk(pool, scores, 5), 4),
        "pairwise": round(pairwise_accuracy(pool, scores), 4),
    }


def size(data: Dataset) -> dict[str, int]:
    """Records and tasks with records."""
    return {
        "records": len(data.records),
        "tasks": len(np.unique(data.records.columns["task"])),
    }


def moved(
    kb: nn.Module, data: Dataset, name: str, steps: int, fraction: float, seed: int
) -> dict[str, nn.Module]:
    """The three ways of moving ``kb`` to ``data``'s platform, each from the same records."""
    torch.manual_seed(seed)
    config = distill.DistillConfig(
        progress_steps=steps, compress_steps=steps, target_fraction=fraction, seed=seed
    )
    chain = distill.Chain(kb)  # type: ignore[arg-type]
    rows = distill.pick_target(chain, data, config)
    picked = data.subset(rows)
    chain = distill.step(chain, picked, name, config, data, records_descriptor(data.records))
    short = TrainConfig(max_steps=steps, warmup_steps=30, seed=seed)
    quiet = lambda *a: None  # noqa: E731
    finetuned, _ = train(picked, None, kb.config, short, init=kb, log=quiet)
    scratch, _ = train(picked, None, kb.config, short, log=quiet)
    return {"distill": chain.scorer(name), "finetune": finetuned, "scratch": scratch}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("train", type=Path)
    parser.add_argument("pools", nargs="+", type=Path)
    parser.add_argument("--model", type=Path, default=None, help="default: the packaged base model")
    parser.add_argument("--fraction", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=300, help="of each phase and training")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    start = time.time()
    args.model = args.model or models.base_model_path()
    kb, vocab, tokenizer, _ = models.load(args.model)
    data = load_dataset(args.train, vocab=vocab, tokenizer=tokenizer).without_networks(
        list(zoo.HELD_OUT)
    )
    pools = {p.name: load_dataset(p, vocab=vocab, tokenizer=tokenizer) for p in args.pools}
    figures: dict[str, Any] = {
        "random": {name: {"top1": random_top1(pool)} for name, pool in pools.items()},
        "as_is": {name: score(kb, pool) for name, pool in pools.items()},
    }
    seeds = [int(s) for s in args.seeds.split(",")]
    for seed in seeds:
        for method, net in moved(
            kb, data, args.train.name, args.steps, args.fraction, seed
        ).items():
            per = {name: score(net, pool) for name, pool in pools.items()}
            figures.setdefault(method, {})[seed] = per
    means = {
        method: {
            name: round(float(np.mean([figures[method][s][name]["top1"] for s in seeds])), 4)
            for name in pools
        }
        for method in ("distill", "finetune", "scratch")
    }
    print(
        json.dumps(
            {
                "top1_mean_over_seeds": means,
                "figures": figures,
                "train": {"dir": args.train.name, **size(data), "fraction": args.fraction},
                "pools": {name: size(p) for name, p in pools.items()},
                "model": args.model.name,
                "steps": args.steps,
                "seeds": seeds,
                "seconds": round(time.time() - start, 1),
                "torch_threads": torch.get_num_threads(),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
