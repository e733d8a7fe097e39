"""How good are a pre-trained cost model's picks in a live search: the first round of a tuning
run, where no measurement of the network exists yet and the model alone chooses what to measure.

`bench_learning.py` replays pools of programs that earlier runs measured; a live search proposes
other candidates (its evolutionary search is guided by the model being tested), and a round of
2 picks a task (a 256-trial run's) leaves no room for a miss on a heavy task. Here each cost
model runs exactly one round of MetaSchedule's evolutionary search on every task of a held-out
network (population as `tcl tune`'s, --picks programs measured a task), nothing is built, and
the round is scored by the network's estimated latency after it: the sum over tasks of the
task's weight x its best measured program. Per task, the best of the round is compared with the
first model's (the baseline): the geometric mean of the ratios and the tasks where one model's
best is over 1.5x the other's.

Runs are interleaved (seed, then network, then model) and kept in
OUT/<network>-<model>-s<seed>/ (resumed; --fresh redoes them). Model names as in
`bench_tune.py`: tcl-then-xgb (the packaged base model), tcl-then-xgb@NAME (the checkpoint
OUT/NAME.pt), xgb (from nothing: its first round is random picks), random; a suffix sets the
search as there (tcl-then-xgb-p32: a population of 32, tcl-then-xgb-time: --picks a task on
average, shared among the tasks by their time, `tcl tune --allot time`: in a first round, by
weight x FLOPs; tcl-then-xgb-f2: the quick first round of `tcl tune --minutes`, 2 programs a
task picked among the random programs of a search of population 32, whatever --picks says).

Usage: taskset -c 1 python bench/bench_first_round.py --platform cpu-native-1t
       --networks resnet50,mobilenet_v2,bert_tiny --models tcl-then-xgb,tcl-then-xgb@new
       [--seeds 0,1] [--picks 2] [--out bench/out/first-round]
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from pathlib import Path
from typing import Any

from _common import machine
from bench_tune import CHECKPOINT, cost_model_of

from tcl.tuning import platforms

ROOT = Path(__file__).resolve().parent.parent


def first_round(
    network: str, kind: str, seed: int, args: argparse.Namespace, platform: platforms.Platform
) -> dict[str, Any]:
    """One round of ``kind``'s search on every task of ``network``: per task (workload key) its
    weight and best measured cost (s), and the round's seconds. Kept in the run's directory."""
    work = args.out / f"{network}-{kind}-s{seed}"
    saved = work / "round.json"
    if saved.exists() and not args.fresh:
        return dict(json.loads(saved.read_text()))
    if work.exists():
        shutil.rmtree(work)
    from tcl.records import read_records
    from tcl.tuning.allot import DEFAULT_ALLOT, allotment
    from tcl.tuning.curves import best_costs
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune import network_tasks, task_weights
    from tcl.tuning.tune_search import Search
    from tcl.tuning.user_models import load_model

    cost_model, options = cost_model_of(kind)
    checkpoint = options.pop("checkpoint", None)
    model_path = str(args.out / f"{checkpoint}.pt") if checkpoint else None
    _, extracted = network_tasks(load_model(network), platform.tvm_target(), TuneOptions(**options))
    allotted = allotment(extracted, options.get("allot", DEFAULT_ALLOT))
    per_task = [allotted.picks(key, args.picks) for key in allotted.weights] if allotted else []
    per_round = args.picks
    if options.get("first_round"):
        # A quick first round (tcl tune --minutes' first round, MODEL-fK) of K a task is only
        # searched as one where the rounds after it are larger; a time budget already spent
        # ends each task's search after its first round (a task of fewer than K programs
        # would otherwise leave trials to another's second).
        quick = options["first_round"]
        per_task = (
            [allotted.picks(k, quick) for k in allotted.weights]
            if allotted
            else [quick] * len(extracted)
        )
        per_round = quick + 1
        options["minutes"] = 1e-9
    options["per_round"] = per_round
    tune = TuneOptions(
        trials=sum(per_task) if per_task else args.picks * len(extracted),
        cost_model=cost_model,
        model_path=model_path,
        seed=seed,
        progress=False,
        **options,
    )
    _, _, _, seconds = Search(tune).run(extracted, work, platform)
    rs = read_records(work)
    best = best_costs(rs)
    out = {"seconds": seconds, "trials": len(rs), "weights": task_weights(extracted), "best": best}
    saved.write_text(json.dumps(out))
    return out


def estimated_ms(run: dict[str, Any]) -> float:
    """The network's estimated latency after the round (inf where a task has no program)."""
    best, weights = run["best"], run["weights"]
    return sum(w * best.get(k, math.inf) for k, w in weights.items()) * 1e3


def per_task(run: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Task by task against the baseline run: geometric mean of best / baseline's best, and
    the tasks where one is over 1.5x the other."""
    ratios = [
        run["best"][k] / base["best"][k]
        for k in run["weights"]
        if k in run["best"] and k in base["best"]
    ]
    logs = [math.log(r) for r in ratios]
    return {
        "geomean_ratio": round(math.exp(sum(logs) / len(logs)), 3) if logs else None,
        "tasks_worse_1.5x": sum(r > 1.5 for r in ratios),
        "tasks_better_1.5x": sum(r < 1 / 1.5 for r in ratios),
        "tasks_compared": len(ratios),
    }


def summarize(runs: dict[tuple[str, str, int], dict[str, Any]], models: list[str]) -> dict:
    """Per network and model: the estimate of each seed, their mean, the ratio of means to the
    baseline (the first model) and the per-task comparison with the baseline's run of the same
    seed (pooled over seeds)."""
    out: dict[str, Any] = {}
    for network in sorted({n for n, _, _ in runs}):
        rows = {}
        for kind in models:
            seeds = sorted(s for n, k, s in runs if n == network and k == kind)
            ests = [estimated_ms(runs[network, kind, s]) for s in seeds]
            rows[kind] = {
                "estimated_ms": [round(e, 3) for e in ests],
                "mean_ms": round(sum(ests) / len(ests), 3),
                "seconds": [round(runs[network, kind, s]["seconds"], 1) for s in seeds],
                "trials": [runs[network, kind, s].get("trials") for s in seeds],
            }
            if kind != models[0]:
                pooled = {"best": {}, "weights": {}}
                base: dict[str, Any] = {"best": {}}
                for s in seeds:
                    run, b = runs[network, kind, s], runs[network, models[0], s]
                    pooled["best"].update({(s, k): v for k, v in run["best"].items()})
                    pooled["weights"].update({(s, k): v for k, v in run["weights"].items()})
                    base["best"].update({(s, k): v for k, v in b["best"].items()})
                rows[kind]["vs_" + models[0]] = {
                    "mean_ratio": round(rows[kind]["mean_ms"] / rows[models[0]]["mean_ms"], 3),
                    **per_task(pooled, base),
                }
        out[network] = rows
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--networks", default="resnet50,mobilenet_v2,bert_tiny")
    parser.add_argument(
        "--models",
        default="tcl-then-xgb,xgb",
        help=f"cost models, the first the baseline; NAME{CHECKPOINT}CKPT: the model OUT/CKPT.pt",
    )
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--picks", type=int, default=2, help="programs measured a task")
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "first-round")
    parser.add_argument("--fresh", action="store_true", help="redo every run")
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    args.out.mkdir(parents=True, exist_ok=True)
    models = args.models.split(",")
    start = time.time()
    runs = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        for network in args.networks.split(","):
            for kind in models:
                runs[network, kind, seed] = first_round(network, kind, seed, args, platform)
    summary = {
        "networks": summarize(runs, models),
        "picks_per_task": args.picks,
        "platform": platform.to_dict(),
        "machine": machine(),
        "method": "one round of MetaSchedule's evolutionary search per task (tcl tune's "
        "population), --picks programs measured a task (shared among the tasks by weight x FLOPs "
        "for MODEL-time), nothing built; estimated_ms: sum over "
        "tasks of weight x best measured cost; runs interleaved seed > network > model",
        "seconds": round(time.time() - start, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
