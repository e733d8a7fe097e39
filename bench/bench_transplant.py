"""Are other tasks' best programs, replayed on a new task, better first picks than the quick
round's?

A time budget's quick round (``tcl tune --minutes``) measures, per task, the cost model's top 2
of 32 random programs. Here, for the heaviest tasks of each network (weight x FLOPs), the same
picks are measured in one batch beside the top picks among the task's transplants
(:mod:`tcl.integrations.tvm.transplant`: the best program of every training-network task in the
donor stores, replayed on the task, ranked by the share of tile decisions kept, then by the
cost model), and the best program of a store of the network's tuning runs where one is given.
Only workloads that a training network of the zoo holds are donors. Prints one JSON line: per
task the milliseconds of each arm's best pick, and per network the tasks' sum weighted by how
often the network runs them. ``--save-donors FILE`` writes the donors read
(:func:`tcl.integrations.tvm.transplant.save_donors`), and ``--donors FILE`` reads them back
in a second instead of minutes.

    taskset -c 1 python bench/bench_transplant.py --platform cpu-native-1t \\
        --networks resnet50,mobilenet_v2,bert_tiny --tasks 8 \\
        --pool bench/pools/cpu-native-1t-15f4fd4e37a3ec20/search
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import DATABASE_FILES, machine, open_store

from tcl import zoo
from tcl.integrations.tvm import measure as tm
from tcl.integrations.tvm.adapter import CostModel
from tcl.integrations.tvm.search import mean_secs
from tcl.integrations.tvm.transplant import best_programs, load_donors, save_donors, transplanted
from tcl.tuning import platforms
from tcl.tuning.collect import MeasureProtocol, measurement_workers

ROOT = Path(__file__).resolve().parent.parent


def stores_under(roots: list[Path], kind: str) -> list[Path]:
    """Every store directory at or under ``roots`` (one with a manifest and a database) of a
    target of ``kind`` ("llvm", "cuda")."""
    found = []
    for root in roots:
        for manifest in sorted(root.rglob("manifest.json")):
            d = manifest.parent
            platform = json.loads(manifest.read_text()).get("platform", {})
            if platform.get("target", {}).get("kind") != kind:
                continue
            if any((d / f).exists() or (d / f"{f}.gz").exists() for f in DATABASE_FILES[1:]):
                found.append(d)
    return found


def training_donors(roots: list[Path], kind: str, scratch: Path) -> tuple[list[Any], list[Path]]:
    """The best program of each workload a training network of the zoo holds, per store under
    ``roots`` of a target of ``kind`` (a root that is a donor file: its donors); and the stores."""
    donors: list[Any] = [d for r in roots if r.is_file() for d in load_donors(r)]
    stores = stores_under([r for r in roots if r.is_dir()], kind)
    for store in stores:
        tasks = json.loads((store / "manifest.json").read_text()).get("tasks", {})
        only = {k for k, t in tasks.items() if set(t.get("networks", {})) & set(zoo.TRAINING)}
        donors += best_programs(open_store(store, scratch), only)
    return donors, stores


def pool_best(pool: Path | None, scratch: Path) -> dict[str, float]:
    """The fastest measured program (s) of each workload of the pool store, by workload key."""
    if pool is None:
        return {}
    best: dict[str, float] = {}
    keys: dict[Any, str] = {}  # a workload's key serializes its module: once per workload
    for record in open_store(pool, scratch).get_all_tuning_records():
        if record.run_secs:
            key = keys.get(record.workload) or keys.setdefault(
                record.workload, tm.entry_key(record.workload)
            )
            secs = mean_secs(record.run_secs)
            best[key] = min(secs, best.get(key, secs))
    return best


def task_row(
    task: Any, target: Any, model: Any, donors: list[Any], args: Any, workers: Any
) -> dict:
    """One task: the quick round's picks, the transplants' picks and their best, measured."""
    ctx = tm.replay_context(task.mod, target)
    ctx.generate_design_space()  # sets the task's postprocessors
    t0 = time.perf_counter()
    grafts = transplanted(task.mod, list(ctx.space_generator.postprocs), donors, args.limit)
    apply_s = time.perf_counter() - t0
    randoms = tm.random_candidates(task.mod, target, args.random, args.seed)
    t0 = time.perf_counter()
    scores = model.predict(ctx, [g.candidate for g in grafts]) if grafts else np.zeros(0)
    random_scores = model.predict(ctx, randoms)
    score_s = time.perf_counter() - t0
    order = sorted(range(len(grafts)), key=lambda i: (-grafts[i].kept, -scores[i]))
    picked = [grafts[i].candidate for i in order[: args.ceiling]]
    quick = [randoms[i] for i in np.argsort(-random_scores)[: args.picks]]
    measured, _ = tm.measure(*workers, picked + quick, target)
    ms_ = [mean_secs(m.run_secs) * 1e3 if m.run_secs else float("inf") for m in measured]
    grafted, quick_ms = ms_[: len(picked)], ms_[len(picked) :]
    return {
        "task": task.name,
        "weight": task.weight,
        "transplants": len(grafts),
        "all_kept": sum(g.kept == 1.0 for g in grafts),
        "replay_s": round(apply_s, 2),
        "score_s": round(score_s, 2),
        "quick_ms": min(quick_ms),
        "transplant_ms": min(grafted[: args.picks], default=float("inf")),
        "transplant_ceiling_ms": min(grafted, default=float("inf")),
        "one_each_ms": min(quick_ms[0], grafted[0] if grafted else float("inf")),
        "quick_each_ms": [round(x, 4) for x in quick_ms],
        "transplant_each_ms": [round(x, 4) for x in grafted],
        "kept_of_picks": [round(grafts[i].kept, 3) for i in order[: args.picks]],
    }


def weighted(rows: list[dict], key: str) -> float:
    return round(sum(r["weight"] * r[key] for r in rows), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--networks", default="resnet50,mobilenet_v2,bert_tiny")
    parser.add_argument("--tasks", type=int, default=8, help="heaviest tasks per network")
    parser.add_argument(
        "--donors",
        type=Path,
        nargs="+",
        default=[ROOT / "data"],
        help="stores (directories searched for them) or donor files (default: data/)",
    )
    parser.add_argument("--save-donors", type=Path, help="write the donors read to this file")
    parser.add_argument("--pool", type=Path, help="a store of the networks' tuning runs")
    parser.add_argument("--picks", type=int, default=2, help="programs per task and arm")
    parser.add_argument("--ceiling", type=int, default=8, help="transplants measured per task")
    parser.add_argument("--random", type=int, default=32, help="the quick round's random draws")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--limit", type=int, help="replay only the N most alike donors a task (default: all)"
    )
    args = parser.parse_args()
    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    model = CostModel.from_checkpoint()
    workers = measurement_workers(tm, MeasureProtocol.of(platform), platform.threads)
    out: dict[str, Any] = {"bench": "transplant", "machine": machine(), "platform": platform.name}
    try:
        with tempfile.TemporaryDirectory(prefix="tcl-transplant-") as scratch:
            t0 = time.perf_counter()
            donors, stores = training_donors(args.donors, str(target.kind.name), Path(scratch))
            out["donors_read_s"] = round(time.perf_counter() - t0, 1)
            if args.save_donors:
                names = [str(s.relative_to(ROOT) if s.is_relative_to(ROOT) else s) for s in stores]
                about = {"stores": names, "kind": str(target.kind.name)}
                out["donor_file_bytes"] = save_donors(args.save_donors, donors, about)
            best = pool_best(args.pool, Path(scratch))
            out.update(donor_stores=len(stores), donors=len(donors), networks={})
            print(json.dumps({k: v for k, v in out.items() if k.startswith("donor")}), flush=True)
            for network in filter(None, args.networks.split(",")):
                tasks = sorted(zoo.extract(network, target), key=lambda t: -t.weight * t.flops)
                rows = []
                for task in tasks[: args.tasks]:
                    row = task_row(task, target, model, donors, args, workers)
                    key = tm.workload_key(task.mod)
                    row["pool_best_ms"] = best[key] * 1e3 if key in best else None
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                arms = ("quick_ms", "transplant_ms", "one_each_ms")
                summary = {k: weighted(rows, k) for k in arms}
                summary["transplant_ceiling_ms"] = weighted(rows, "transplant_ceiling_ms")
                for r in rows:
                    r["both_ms"] = min(r["quick_ms"], r["transplant_ms"])
                summary["both_ms"] = weighted(rows, "both_ms")
                if all(r["pool_best_ms"] is not None for r in rows):
                    summary["pool_best_ms"] = weighted(rows, "pool_best_ms")
                out["networks"][network] = {"summary": summary, "tasks": rows}
    finally:
        tm.shutdown(*workers)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
