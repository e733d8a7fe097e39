"""Where does a model's live search take it, against a pool of the tuner's candidates?

`bench_learning.py` scores a model on a fixed pool that earlier searches measured; in a run the
evolutionary search is guided by the model under test and climbs to whatever that model scores
highest. Here each model scores, task by task, the pool's programs and the programs its own live
runs measured (`bench_first_round.py`'s or `bench_tune.py`'s work directories): the share of its
live picks that it scores above every program of the pool (the search left the pool's region for
programs the model rates higher than anything there), and how slow those picks ran against the
pool's best program of the task, beside its other picks. A model the search can exploit shows
many picks above the pool and slow ones among them.

Usage: python bench/bench_live_picks.py --network resnet50 --platform cpu-native-1t
       --pool bench/pools/cpu-native-1t-46ea2a7adaf7f73e/search
       --models 'shipped=OUT/resnet50-tcl-then-xgb-s*,host@OUT/host.pt=OUT/resnet50-*@host-s*'
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

import numpy as np
from _common import machine
from bench_learning import load_pools, network_task_weights


def live_picks(checkpoint: str | None, pool: dict, runs: list[Path], weights: dict) -> dict:
    """The figures of one model (module docstring) over its live runs ``runs``."""
    from tcl.integrations.tvm.adapter import CostModel

    model = CostModel.from_checkpoint(checkpoint)
    # per task of the pool: the model's top score of its programs, and its fastest program's cost
    tops = {
        key: (
            float(np.max(model.predict(p.context, p.candidates))),
            float(np.min(p.costs[np.isfinite(p.costs)])),
        )
        for key, p in pool.items()
    }
    above: list[bool] = []
    ratios: list[float] = []
    for run in runs:
        for key, live in load_pools([run], weights).items():
            if key not in tops:
                continue
            pool_top, best = tops[key]
            scores = model.predict(pool[key].context, live.candidates)
            for score, cost in zip(scores, live.costs, strict=True):
                above.append(bool(score > pool_top))
                ratios.append(float(cost) / best)
    flags, costs = np.array(above), np.array(ratios)

    def median(x: np.ndarray) -> float | None:
        return round(float(np.median(x)), 3) if len(x) else None

    return {
        "runs": [r.name for r in runs],
        "picks": len(flags),
        "above_pool": round(float(flags.mean()), 3),
        "cost_over_pool_best": {
            "above_pool": median(costs[flags]),
            "others": median(costs[~flags]),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", required=True)
    parser.add_argument("--platform", default="cpu-native-1t", help="the platform of the runs")
    parser.add_argument("--pool", required=True, help="a store of the tuner's candidates")
    parser.add_argument(
        "--models",
        required=True,
        help="NAME[@CHECKPOINT]=GLOB,... (GLOB: the model's live work directories; no "
        "checkpoint: the packaged base model)",
    )
    args = parser.parse_args()
    weights = network_task_weights(args.network, args.platform)
    pool = load_pools([Path(args.pool)], weights)
    figures = {}
    for item in args.models.split(","):
        name, _, pattern = item.partition("=")
        name, _, checkpoint = name.partition("@")
        runs = sorted(Path(p) for p in glob.glob(pattern))
        if not runs:
            raise SystemExit(f"no work directories match {pattern}")
        figures[name] = live_picks(checkpoint or None, pool, runs, weights)
        print(name, figures[name], flush=True)
    print(
        json.dumps(
            {
                "network": args.network,
                "pool": args.pool,
                "pool_programs": int(sum(len(p.costs) for p in pool.values())),
                "models": figures,
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
