"""Does online fine-tuning (tcl.training.online)
help the tuner find fast programs sooner? An offline
simulation on measured data, side by side with the frozen model, in one run.

Each held-out network's tasks on the target platform are candidate pools (their committed,
measured programs). In every round, task by task as MetaSchedule interleaves them, the model
picks the ``--batch`` best-scored programs not yet measured, their costs are revealed, and the
online trainer takes its steps. After each round, per network: TenSet's score of the best programs
found so far (sum_t w_t best_t / sum_t w_t found_t: 1.0 = every task's best found). The frozen
model (steps 0) is the baseline; every variant starts from the same base model.

Usage: python bench/bench_online.py [--model PATH] [--platform cpu-avx2-1t] [--rounds 4]
       [--batch 2] [--variant steps:lr ...]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine

from tcl import model as models
from tcl import zoo
from tcl.model.inputs import predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.training.online import OnlineConfig, OnlineTrainer
from tcl.tuning import platforms

ROOT = Path(__file__).resolve().parent.parent


def simulate(
    net: Any,
    data: Dataset,
    networks: list[str],
    config: OnlineConfig,
    rounds: int,
    batch: int,
) -> list[dict[str, float]]:
    """Per round, per network: the score of the best programs found so far."""
    net = copy.deepcopy(net)
    trainer = OnlineTrainer(net, config)
    rs = data.records
    costs = rs.columns["mean_cost"]
    task_col = rs.columns["task"]
    tasks = sorted(set(task_col.tolist()))
    pools = {t: np.flatnonzero(task_col == t) for t in tasks}
    measured: dict[int, list[int]] = {t: [] for t in tasks}
    curve = []
    for _ in range(rounds):
        for t in tasks:
            left = np.setdiff1d(pools[t], measured[t])
            if not len(left):
                continue
            scores = predict(net, rs.select(left))
            picked = left[np.argsort(-scores, kind="stable")[:batch]]
            measured[t].extend(picked.tolist())
            trainer.add(str(t), rs.select(picked), costs[picked])
            trainer.update(str(t))
        point = {}
        for network in networks:
            num = den = 0.0
            for t in data.tasks_of(network):
                if t not in pools:
                    continue
                weight = data.networks[t][network]
                best = float(costs[pools[t]].min())
                num += weight * best
                den += weight * float(costs[measured[t]].min())
            point[network] = round(num / den, 4) if den > 0 else float("nan")
        curve.append(point)
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=None, help="checkpoint (default: the base model)")
    parser.add_argument("--platform", default="cpu-avx2-1t")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--min-pool", type=int, default=16)
    parser.add_argument(
        "--variant", action="append", default=None, help="steps:lr (default 5:1e-4, 20:1e-4)"
    )
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    data = load_dataset(ROOT / "data" / f"{platform.name}-{platform.id}")
    networks = [n for n in zoo.HELD_OUT if n in data.network_names()]
    data = data.of_networks(networks)
    task_col = data.records.columns["task"]
    sizes = np.bincount(task_col)
    data = data.subset(sizes[task_col] >= args.min_pool)
    net, _, _, _ = models.load(args.model or models.base_model_path())
    variants = [(0, 0.0)] + [
        (int(s), float(lr))
        for s, lr in (v.split(":") for v in args.variant or ["5:1e-4", "20:1e-4"])
    ]
    results: dict[str, Any] = {}
    start = time.time()
    for steps, lr in variants:
        config = OnlineConfig(steps=steps, lr=lr)
        curve = simulate(net, data, networks, config, args.rounds, args.batch)
        name = "frozen" if steps == 0 else f"steps={steps},lr={lr:g}"
        final = round(float(np.mean(list(curve[-1].values()))), 4)
        results[name] = {"per_round": curve, "final_mean": final}
        print(name, json.dumps(results[name]), flush=True)
    frozen = results["frozen"]["final_mean"]
    print(
        json.dumps(
            {
                "final_mean": {k: v["final_mean"] for k, v in results.items()},
                "best_over_frozen": round(
                    max(v["final_mean"] for v in results.values()) / frozen, 4
                ),
                "results": results,
                "platform": platform.name,
                "model": str(args.model or "base"),
                "tasks": len(set(task_col[sizes[task_col] >= args.min_pool].tolist())),
                "records": len(data.records),
                "rounds": args.rounds,
                "batch": args.batch,
                "seconds": round(time.time() - start, 1),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
