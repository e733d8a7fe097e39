"""The headline: tuning whole held-out networks with tcl's cost model against MetaSchedule's XGB
(its default) and its MLP (the TenSet-MLP port) pre-trained on the committed data, at the same
trial budget, on this machine, in one run.

tcl uses the packaged base model (trained on the committed dataset's training networks; the
networks tuned here are held out). The MLP is pre-trained here on the committed records of the
tuning platform's training networks (replayed through TVM for its features) and saved once;
every network's run starts from that state. XGB starts from nothing, as stock MetaSchedule does.

For each network and cost model: the final latency (relax VM; all of a network's builds timed
again side by side, in turn, after the runs, so that they see the same machine), and the trials and
wall time after which the tuner's estimated network latency first reached the MLP's final
estimate. Prints one JSON line with final_latency_ratio_vs_mlp and final_latency_ratio_vs_xgb
(geometric means over networks of baseline latency / tcl latency), tuning_time_ratio_vs_mlp
(MLP's time to its own final estimate / tcl's time to reach it), per-network detail; writes the
curves as a PNG.

Each run's report is saved in OUT/<network>-<model>/report.json and reused by the next
invocation (resume after an interruption; --fresh redoes everything).

Usage: python bench/bench_tune.py [--trials 128] [--networks resnet50,mobilenet_v2,bert_tiny]
       [--platform cpu-avx2-1t] [--out bench/out/tune] [--seed 0] [--fresh]

On a 1-thread platform, run it pinned to one core (`taskset -c 1 python bench/bench_tune.py`):
search, build, measurement and the final timings then share that core and are not disturbed by
work on the other.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine

from tcl import zoo
from tcl.records.dataset import load_dataset
from tcl.tuning import platforms
from tcl.tuning.latency import time_interleaved
from tcl.tuning.tune import TuneReport, plot_curves, tune_network, write_report

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("tcl", "mlp", "xgb")


def pretrain_mlp(platform: platforms.Platform, path: Path) -> dict[str, Any]:
    """MetaSchedule's MLP trained on the committed records of ``platform``'s training networks."""
    from tcl.integrations.tvm import baselines as tcm

    snapshot = ROOT / "data" / f"{platform.name}-{platform.id}"
    if not snapshot.exists():
        raise SystemExit(f"no committed data for {platform.name} on this machine ({snapshot})")
    records = load_dataset(snapshot).without_networks(list(zoo.HELD_OUT)).records
    start = time.time()
    from tcl.integrations.tvm.mlp_state import save_mlp

    save_mlp(tcm.fit("mlp", records), path)
    return {"records": len(records), "seconds": round(time.time() - start, 1)}


def reach(report: TuneReport, goal_ms: float) -> tuple[int | None, float | None]:
    """(trials, seconds) after which the estimated latency first was <= goal_ms."""
    for point in report.curve:
        if point["estimated_ms"] <= goal_ms * (1 + 1e-9):
            return int(point["trial"]), float(point["seconds"])
    return None, None


def geomean(values: list[float]) -> float | None:
    good = [v for v in values if v and math.isfinite(v) and v > 0]
    return round(float(np.exp(np.mean(np.log(good)))), 4) if good else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=128)
    parser.add_argument("--networks", default="resnet50,mobilenet_v2,bert_tiny")
    parser.add_argument("--platform", default="cpu-avx2-1t")
    parser.add_argument("--seed", type=int, default=0, help="MetaSchedule's search seed")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "tune")
    parser.add_argument("--png", type=Path, default=ROOT / "bench" / "tune_curves.png")
    parser.add_argument(
        "--fresh", action="store_true", help="redo every run (default: reuse OUT/*/report.json)"
    )
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    args.out.mkdir(parents=True, exist_ok=True)
    mlp_path = args.out / "mlp_pretrained.npz"
    mlp_pretraining: dict[str, Any] = {"reused": str(mlp_path)}
    if args.fresh or not mlp_path.exists():
        mlp_pretraining = pretrain_mlp(platform, mlp_path)

    reports: dict[str, dict[str, TuneReport]] = {}
    for network in args.networks.split(","):
        reports[network] = {}
        for kind in MODELS:
            work = args.out / f"{network}-{kind}"
            saved = work / "report.json"
            if saved.exists() and not args.fresh:  # resume: every run's report is kept
                reports[network][kind] = TuneReport(**json.loads(saved.read_text()))
                continue
            if work.exists():
                for f in sorted(work.iterdir(), reverse=True):
                    if f.is_file():
                        f.unlink()
            report = tune_network(
                network,
                platform,
                args.trials,
                work,
                cost_model=kind,
                model_path=str(mlp_path) if kind == "mlp" else None,
                seed=args.seed,
            )
            write_report(report, saved)
            reports[network][kind] = report
            print("\n".join(report.lines()), flush=True)

    # Each run timed its own build at its end, minutes or hours apart from the others; the
    # comparison uses the builds timed again side by side, in turn, in this process.
    interleaved = {
        network: time_interleaved(
            network, platform, {kind: args.out / f"{network}-{kind}" for kind in by_kind}
        )
        for network, by_kind in reports.items()
    }
    per_network: dict[str, Any] = {}
    for network, by_kind in reports.items():
        goal = by_kind["mlp"].curve[-1]["estimated_ms"] if by_kind["mlp"].curve else math.inf
        detail: dict[str, Any] = {}
        for kind, report in by_kind.items():
            trials, seconds = reach(report, goal)
            detail[kind] = {
                "latency_ms": round(interleaved[network][kind], 4),
                "latency_ms_end_of_run": round(report.latency_ms, 4),
                "untuned_ms": round(report.untuned_ms, 4),
                "torch_ms_end_of_run": round(report.torch_ms, 4),
                "estimated_ms": round(report.curve[-1]["estimated_ms"], 4)
                if report.curve
                else None,
                "tune_seconds": round(report.tune_seconds, 1),
                "trials_to_mlp_final": trials,
                "seconds_to_mlp_final": seconds,
                "tasks": report.tasks,
            }
        tcl_time, mlp_time = (
            detail["tcl"]["seconds_to_mlp_final"],
            detail["mlp"]["seconds_to_mlp_final"],
        )
        detail["tuning_time_ratio_vs_mlp"] = (
            round(mlp_time / tcl_time, 3) if tcl_time and mlp_time else None
        )
        detail["torch_ms"] = round(interleaved[network]["torch"], 4)
        per_network[network] = detail
    plot_curves(
        [r for by_kind in reports.values() for r in by_kind.values()],
        args.png,
        f"{platform.name}, {args.trials} trials",
    )
    lat = {k: [per_network[n][k]["latency_ms"] for n in per_network] for k in MODELS}
    print(
        json.dumps(
            {
                "final_latency_ratio_vs_mlp": geomean(
                    [m / t for m, t in zip(lat["mlp"], lat["tcl"], strict=True)]
                ),
                "final_latency_ratio_vs_xgb": geomean(
                    [x / t for x, t in zip(lat["xgb"], lat["tcl"], strict=True)]
                ),
                "tuning_time_ratio_vs_mlp": geomean(
                    [d["tuning_time_ratio_vs_mlp"] for d in per_network.values()]
                ),
                "per_network": per_network,
                "trials": args.trials,
                "seed": args.seed,
                "platform": platform.to_dict(),
                "mlp_pretraining": mlp_pretraining,
                "png": str(args.png),
                "method": "one tuning run per network and cost model; latency_ms: the built "
                "networks timed again in turn (5 rounds, median) after all runs, each timing a "
                "median of 5 repeats of >= 100 ms (3 single runs above 50 ms); times: tuner "
                "wall time to the MLP's final estimated latency",
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
