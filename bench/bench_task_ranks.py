"""Which of a network's tasks does a cost model rank worse than random picks?

``bench_learning.py`` scores a whole network; this breaks its first round down by task. Per task
of the network's pool (the programs that tuning runs measured, ``bench_learning.load_pools``)
and per cost model, frozen: the Spearman correlation of the model's scores with the programs'
speed, the share of the task's best that the model's ``--picks`` best-scored programs reach
(best cost in the pool over the best cost among them), and the same share expected of as many
programs drawn uniformly without replacement (exact, from the order statistics: no random
draw). A task where the model's picks fall below the random expectation is one where ranking
hurts; the JSON line says how much of the network's weighted shortfall each such task holds.

With ``--show``, the tile sizes (``SamplePerfectTile`` decisions) of the model's best-scored and
of the pool's fastest programs of the task with the largest shortfall, to read what the model
prefers there. With ``--inner-tile I``, each task's programs grouped by the innermost factor of
their I-th tile decision (0-based; for a matmul's loops i, j, k, I = 1 is the output columns'
innermost tile, the loop MetaSchedule's CPU rules vectorize): per factor, the programs, their
median cost over the task's best and their median score.

Usage: python bench/bench_task_ranks.py --network bert_tiny --runs POOL_DIR
[--platform cpu-native-1t] [--models tcl,xgb-prior-frozen] [--picks 4] [--checkpoint PATH]
[--show 5] [--inner-tile 1]. Prints one JSON line per model.
"""

from __future__ import annotations

import argparse
import glob
import json
from math import comb
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine
from bench_learning import Pool, load_pools, make_model, network_task_weights, tiles

from tcl.training.metrics import ranks


def found_share(costs: np.ndarray, picked: np.ndarray, best: float) -> float:
    """The task's best cost over the best cost among ``picked`` (an index array); picks that
    all failed count as the task's slowest program, as ``bench_learning.score`` does."""
    found = costs[picked][np.isfinite(costs[picked])]
    return best / float(found.min() if len(found) else costs[np.isfinite(costs)].max())


def random_share(costs: np.ndarray, picks: int) -> float:
    """:func:`found_share` expected of ``picks`` programs drawn uniformly without replacement:
    the i-th fastest (0-based) is the best of the draw with probability C(n-1-i, k-1) / C(n, k)."""
    n, k = len(costs), min(picks, len(costs))
    finite = np.sort(costs[np.isfinite(costs)])
    best, worst = float(finite[0]), float(finite[-1])
    shares = [best / float(c) for c in finite] + [best / worst] * (n - len(finite))
    return sum(comb(n - 1 - i, k - 1) / comb(n, k) * s for i, s in enumerate(shares))


def blocks(pool: Pool) -> list[str]:
    """The names of the task's blocks, in order (what the task computes)."""
    script = pool.context.mod["main"].script().splitlines()
    return [line.split('"')[1] for line in script if 'sblock("' in line and '"root"' not in line]


def by_inner_tile(pool: Pool, scores: np.ndarray, index: int) -> dict[int, Any] | None:
    """Per innermost factor of the ``index``-th tile decision: the programs that ran, their
    median cost over the task's best and their median score; None where a program has no such
    decision."""
    decisions = [tiles(c) for c in pool.candidates]
    if any(len(d) <= index for d in decisions):
        return None
    inner = np.array([d[index][-1] for d in decisions])
    finite = np.isfinite(pool.costs)
    best = pool.costs[finite].min()
    groups = {}
    for factor in np.unique(inner[finite]):
        ran = finite & (inner == factor)
        groups[int(factor)] = {
            "programs": int(ran.sum()),
            "cost_over_best": round(float(np.median(pool.costs[ran]) / best), 2),
            "score": round(float(np.median(scores[ran])), 2),
        }
    return groups


def rank_tasks(
    model: Any, pools: dict[str, Pool], picks: int, inner_tile: int | None = None
) -> list[dict[str, Any]]:
    rows = []
    for key, pool in pools.items():
        finite = np.isfinite(pool.costs)
        if finite.sum() <= picks:
            continue  # every program is picked: nothing to rank
        scores = np.asarray(model.predict(pool.context, pool.candidates))
        best = float(pool.costs[finite].min())
        top = np.argsort(-scores, kind="stable")[:picks]
        # Spearman's rho as tcl.tuning.collect computes it: Pearson's on tie-averaged ranks
        rho = np.corrcoef(ranks(scores[finite]), ranks(-pool.costs[finite]))[0, 1]
        rows.append(
            {
                "task": key,
                "blocks": blocks(pool),
                "weight": pool.weight,
                "programs": len(pool.costs),
                "rho": round(float(rho), 3),
                "model": round(found_share(pool.costs, top, best), 3),
                "random": round(random_share(pool.costs, picks), 3),
                "by_inner_tile": None
                if inner_tile is None
                else by_inner_tile(pool, scores, inner_tile),
                "_scores": scores,
            }
        )
    return rows


def show(pool: Pool, scores: np.ndarray, count: int) -> dict[str, Any]:
    """Tile sizes, cost and rank of the model's best-scored and the pool's fastest programs."""
    order = np.argsort(-scores, kind="stable")
    rank = np.empty(len(order), dtype=int)
    rank[order] = np.arange(len(order))

    def row(i: int) -> dict[str, Any]:
        cost = pool.costs[i]
        return {
            "us": round(float(cost) * 1e6, 1) if np.isfinite(cost) else None,
            "model_rank": int(rank[i]),
            "tiles": tiles(pool.candidates[i]),
        }

    return {
        "model_top": [row(int(i)) for i in order[:count]],
        "fastest": [row(int(i)) for i in np.argsort(pool.costs, kind="stable")[:count]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", required=True)
    parser.add_argument("--runs", required=True, help="glob of run or pool directories")
    parser.add_argument("--platform", default="cpu-native-1t", help="the platform the runs tuned")
    parser.add_argument("--models", default="tcl,xgb-prior-frozen", help="bench_learning's names")
    parser.add_argument("--picks", type=int, default=4, help="programs a task's first round picks")
    parser.add_argument("--checkpoint", help="a tcl checkpoint (default: the base model)")
    parser.add_argument("--show", type=int, default=0, help="programs shown of the worst task")
    parser.add_argument("--inner-tile", type=int, help="group by this tile decision's innermost")
    args = parser.parse_args()
    run_dirs = sorted(Path(p) for p in glob.glob(args.runs))
    if not run_dirs:
        raise SystemExit(f"no directories match {args.runs}")
    pools = load_pools(run_dirs, network_task_weights(args.network, args.platform))
    for name in args.models.split(","):
        rows = rank_tasks(make_model(name, args.checkpoint), pools, args.picks, args.inner_tile)
        if not rows:
            raise SystemExit(
                f"no task of {args.network} in {args.runs} has more than {args.picks} programs "
                "that ran: nothing to rank"
            )
        shortfall = {r["task"]: r["weight"] * max(0.0, r["random"] - r["model"]) for r in rows}
        total = sum(shortfall.values())
        for r in rows:
            r["share_of_shortfall"] = round(shortfall[r["task"]] / total, 3) if total else 0.0
        worst = max(rows, key=lambda r: shortfall[r["task"]])
        weights = sum(r["weight"] for r in rows)
        line = {
            "network": args.network,
            "model": name,
            "picks": args.picks,
            "weighted_model": round(sum(r["weight"] * r["model"] for r in rows) / weights, 4),
            "weighted_random": round(sum(r["weight"] * r["random"] for r in rows) / weights, 4),
            "tasks_below_random": sum(r["model"] < r["random"] for r in rows),
            "tasks": [{k: v for k, v in r.items() if k != "_scores"} for r in rows],
            "worst_task": worst["task"],
            "worst_programs": show(pools[worst["task"]], worst["_scores"], args.show)
            if args.show and total
            else None,
            "runs": [d.name for d in run_dirs],
            "checkpoint": Path(args.checkpoint).name if args.checkpoint else "base model",
            "machine": machine(),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
