"""Does learning during a run help? A replay of real tuning runs, side by side in one process.

The programs measured by several tuning runs of one network (``bench_tune``'s work directories:
different cost models and seeds, one platform) form each task's pool; a program measured by
more than one run gets the mean of its costs. The replay tunes the network again, round by
round and task by task: a cost model scores the task's unmeasured programs, the ``--batch``
best are "measured" (their recorded costs revealed) and handed to the model's ``update``, as
MetaSchedule hands it a measured batch. After every round, per model: TenSet's score of the
best programs found so far (sum_t w_t best_t / sum_t w_t found_t, w_t how often task t runs in
the network; 1.0 = every task's best program in the pool found).

The pool stands in for the candidates a search would generate, so this screens how well a
model ranks programs of the kind a search proposes as its measurements accumulate; it is not a
tuning run (a model cannot steer the search here). Models (``--models``): ``tcl`` (the
packaged base model, frozen), ``xgb`` (MetaSchedule's, from nothing, as in a run),
``tcl+xgb`` (``tcl.integrations.tvm.blend``; ``tcl+xgb@K``: the learner weighs as much as
the prior after K programs of a task), ``handoff@K`` (a hand-off, ``Blend(handoff_at=K)``: the
frozen model alone until K programs of a task are measured, then XGB alone, fitted on
everything measured so far; ``tcl-then-xgb`` is ``handoff@4``),
``tcl-online`` (the base model fine-tuned online, ``CostModel(online_steps=5)``), ``tcl-gp``
(the base model's score as the mean of a Gaussian process per task on its embedding,
``CostModel(learn=True)``, :mod:`tcl.training.task_gp`; ``tcl-gp~E``: ranked by the mean plus E
deviations; ``tcl-gp/K``: with the run-wide linear correction on the embedding, its ridge K
programs' worth, ``GPConfig(shared=K)``; ``tcl-gp/Ku``: the correction on tasks with nothing
measured too, ``shared_unmeasured=True``), ``xgb-pre`` (MetaSchedule's XGB fitted first on
the records of ``--pretrain``, collection directories, leaving out every task of a held-out
network, then updated as in a run: MetaSchedule refits it only once its data has grown by a
fifth since the last fit, so after a large pre-fit it may not refit during a replay),
``xgb-pre-frozen`` (the same fit, never updated: the counterpart of the frozen ``tcl``),
``tcl-then-xgb-pre`` (``tcl-then-xgb`` handing over to that XGB instead of one from nothing),
``xgb-prior`` (the tuner's ``xgb-prior``: the packaged pre-fitted XGB, or ``--prior``'s,
growing trees on the replay's measurements, :mod:`tcl.integrations.tvm.prior_xgb`;
``xgb-prior@R``: R trees a refit instead of ``RunFit``'s), ``xgb-prior-frozen`` (its booster
alone), ``tcl-then-xgb-prior@K`` (the tuner's ``tcl-then-xgb-prior``, its learner ``--prior``'s
booster or the packaged one, its hand-off after K programs of a task instead of
``HANDOFF_AT``: ``tcl tune --hand-off K``),
``tcl~xgb-prior~W`` (the frozen base model's and the learning ``xgb-prior``'s ranks mixed with
weight W on the latter from the first pick, ``RankMix``; W 0.5 where not given) and
``random`` (a uniform pick); ``NAME^K``: model NAME's best ``--batch`` - K programs of a task
and K drawn at random from the rest each round (``Explore``: the replay's ``tcl tune --explore
K``, MetaSchedule's epsilon-greedy pick at a fixed count; ``NAME^K#S`` draws with seed S);
``NAME|divN@R``: model NAME's best programs of a task, but at most N (1 where not given) of
each innermost tiling in a round (``Diverse``: the innermost factor of every tile decision),
in the task's first R rounds (every round where not given).
``--checkpoint`` replaces the packaged base model in every tcl variant. ``NAME#K`` runs model
NAME again (XGB's fits and the random picks differ from run to run; ``random#K`` draws with
seed K); the JSON line's ``repeated`` gives each such model's runs' mean, least and most
score by round.

Usage: python bench/bench_learning.py --network mobilenet_v2
       [--runs 'bench/out/tune/mobilenet_v2-*'] [--platform cpu-avx2-1t]
       [--models tcl,xgb,tcl+xgb,tcl+xgb@8] [--rounds 8] [--batch 4] [--checkpoint PATH]
       [--pretrain DATA_DIR[,DATA_DIR...]] [--pretrain-depth 10] [--prior BOOSTER]
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from _common import machine

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Pool:
    """One task's measured programs: its tune context, the programs as measure candidates,
    their mean costs (seconds; inf where every measurement failed) and its weight."""

    context: Any
    candidates: list[Any]
    costs: np.ndarray
    weight: float


def load_pools(run_dirs: list[Path], weights: dict[str, float]) -> dict[str, Pool]:
    """Every task of ``weights`` (workload key -> weight) with the programs the runs measured,
    each program once (by its trace)."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.baselines import Replayer
    from tcl.integrations.tvm.measure import trace_key
    from tcl.records import read_records

    rs = read_records([str(d) for d in run_dirs])
    replayer = Replayer()
    programs: dict[str, dict[str, tuple[int, list[float]]]] = {}
    for row in range(len(rs)):
        key = str(rs.tasks.workload_key[int(rs.columns["task"][row])])
        if key not in weights:
            continue
        trace = trace_key(replayer.line(rs, row)[1][0])
        _, costs = programs.setdefault(key, {}).setdefault(trace, (row, []))
        costs.append(float(rs.columns["mean_cost"][row]))
    pools = {}
    for key, by_trace in programs.items():
        finite = [[c for c in costs if np.isfinite(c) and c > 0] for _, costs in by_trace.values()]
        if not any(finite):
            continue  # no program of this task ran: nothing to find
        records = [replayer.record(rs, row) for row, _ in by_trace.values()]
        pools[key] = Pool(
            ms.TuneContext(mod=records[0].workload.mod, target=records[0].target),
            [r.as_measure_candidate() for r in records],
            np.array([np.mean(c) if c else np.inf for c in finite]),
            weights[key],
        )
    return pools


class RandomPick:
    """Scores at random: the pick of a tuner without a model."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        return self.rng.random(len(candidates))

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        pass


class Frozen:
    """A fitted cost model that scores and no longer learns."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        return np.asarray(self.model.predict(context, candidates))

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        pass


class RankMix:
    """``prior`` and ``learner`` each turned into ranks within the batch and mixed with the
    learner's weight ``weight`` from the first program on (both learn from every update): a
    pre-fitted learner needs no measurements of a task before it is worth weighing."""

    def __init__(self, prior: Any, learner: Any, weight: float) -> None:
        self.prior, self.learner, self.weight = prior, learner, weight

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        from tcl.training.metrics import ranks

        prior = np.asarray(self.prior.predict(context, candidates), dtype=np.float64)
        learned = np.asarray(self.learner.predict(context, candidates), dtype=np.float64)
        return (1.0 - self.weight) * ranks(prior) + self.weight * ranks(learned)

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.prior.update(context, candidates, results)
        self.learner.update(context, candidates, results)


class Explore:
    """``model``'s best ``batch - k`` programs of a task and ``k`` drawn uniformly from the
    rest, each round: what ``tcl tune --explore k`` does in a search (MetaSchedule's
    epsilon-greedy pick, ``eps_greedy``, at a fixed count), the pool standing in for the
    search's initial population."""

    def __init__(self, model: Any, k: int, batch: int, seed: int = 0) -> None:
        self.model, self.k, self.batch = model, k, batch
        self.rng = np.random.default_rng(seed)

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        scores = np.asarray(self.model.predict(context, candidates), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        keep = max(0, self.batch - self.k)
        picks = np.zeros(len(scores))
        picks[order[:keep]] = 2.0
        rest = order[keep:]
        drawn = self.rng.choice(rest, size=min(self.k, len(rest)), replace=False)
        picks[drawn] = 1.0
        return picks

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.model.update(context, candidates, results)


def tiles(candidate: Any) -> list[list[int]]:
    """The ``SamplePerfectTile`` decisions of a program's trace, in trace order."""
    trace = candidate.sch.trace
    return [
        [int(x) for x in trace.decisions[inst]]
        for inst in trace.insts
        if inst.kind.name == "SamplePerfectTile" and inst in trace.decisions
    ]


def inner_tiles(candidate: Any) -> tuple[int, ...]:
    """The innermost factor of each of a program's tile decisions (:func:`tiles`): the loops
    MetaSchedule's CPU rules vectorize and unroll innermost."""
    return tuple(decision[-1] for decision in tiles(candidate))


class Diverse:
    """``model``'s best programs of a task, ``batch`` a round, but at most ``per_tile`` of
    each innermost tiling (:func:`inner_tiles`) in one round, in score order; the best-scored
    of the rest fill a round that runs short. ``rounds``: only in a task's first so many
    rounds (0: all), its best-scored programs after them."""

    def __init__(self, model: Any, batch: int, per_tile: int = 1, rounds: int = 0) -> None:
        self.model, self.batch, self.per_tile, self.rounds = model, batch, per_tile, rounds
        self.seen_rounds: dict[int, int] = {}

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        scores = np.asarray(self.model.predict(context, candidates), dtype=np.float64)
        done = self.seen_rounds.get(id(context), 0)
        self.seen_rounds[id(context)] = done + 1
        if self.rounds and done >= self.rounds:
            return scores
        order = np.argsort(-scores, kind="stable")
        seen: dict[tuple[int, ...], int] = {}
        picks: list[int] = []
        for i in order:
            key = inner_tiles(candidates[i])
            if seen.get(key, 0) < self.per_tile:
                seen[key] = seen.get(key, 0) + 1
                picks.append(int(i))
                if len(picks) == self.batch:
                    break
        out = np.zeros(len(scores))
        out[picks] = 2.0 + np.arange(len(picks))[::-1]
        taken = set(picks)
        rest = [int(i) for i in order if int(i) not in taken]
        out[rest] = 1.0 - np.arange(len(rest)) / max(1, len(rest))
        return out

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.model.update(context, candidates, results)


_FITTED: dict[str, Any] = {}  # a pre-fitted XGB not yet handed to a learning replay


def pretrained_xgb(data_dir: str | None, learning: bool, max_depth: int = 10) -> Any:
    """MetaSchedule's XGB fitted on the records of ``data_dir`` (comma-separated collection
    directories) of tasks of no held-out network, one ``update`` per task
    (``tcl.integrations.tvm.baselines.fit``), its trees at most ``max_depth`` deep
    (MetaSchedule's default: 10). A frozen replay leaves the fit as it was, so the next replay
    reuses it; a learning one changes it, so the one after it fits again."""
    if data_dir is None:
        raise SystemExit("xgb-pre needs --pretrain DIR[,DIR...] (collection directories)")
    if data_dir not in _FITTED:
        from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig

        from tcl import zoo
        from tcl.integrations.tvm.baselines import fit, offline_xgb
        from tcl.records.dataset import load_dataset

        data = load_dataset(data_dir.split(","))
        training = data.without_networks(list(zoo.HELD_OUT))
        began = time.time()
        model = offline_xgb(XGBConfig(max_depth=max_depth))
        _FITTED[data_dir] = fit("xgb", training.records, model=model)
        booster = _FITTED[data_dir].booster
        print(
            f"xgb-pre: fitted on {len(training.records)} records of {data_dir} "
            f"in {time.time() - began:.0f} s; {booster.num_boosted_rounds()} trees, "
            f"{len(booster.save_raw('ubj')) / 1e6:.2f} MB as UBJSON",
            flush=True,
        )
    return _FITTED.pop(data_dir) if learning else Frozen(_FITTED[data_dir])


def make_model(
    name: str,
    checkpoint: str | None = None,
    pretrain: str | None = None,
    depth: int = 10,
    prior: str | None = None,
    batch: int = 4,
) -> Any:
    """A cost model of ``--models`` (module docstring)."""
    from tcl.integrations.tvm.baselines import make_cost_model

    name, _, repeat = name.partition("#")
    if "|div" in name:
        inner, _, spec = name.partition("|div")
        per_tile, _, rounds = spec.partition("@")
        model = make_model(inner, checkpoint, pretrain, depth, prior, batch)
        return Diverse(model, batch, int(per_tile or 1), int(rounds or 0))
    if "^" in name:
        inner, _, k = name.rpartition("^")
        model = make_model(inner, checkpoint, pretrain, depth, prior, batch)
        return Explore(model, int(k), batch, seed=int(repeat or 0))
    if name == "random":
        return RandomPick(int(repeat or 0))
    if name.startswith("tcl-then-xgb-prior"):
        kind, _, handoff_at = name.partition("@")
        return make_cost_model(kind, checkpoint, handoff_at=int(handoff_at or 0), prior_path=prior)
    if name.startswith("tcl~xgb-prior"):
        from tcl.integrations.tvm.adapter import CostModel
        from tcl.integrations.tvm.prior_xgb import PriorXGB, load_booster

        weight = float(name.split("~")[2]) if name.count("~") == 2 else 0.5
        learner = PriorXGB(load_booster(prior) if prior else None, learn=True)
        return RankMix(CostModel.from_checkpoint(checkpoint), learner, weight)
    if name.startswith("xgb-prior"):
        from tcl.integrations.tvm.prior_xgb import PriorXGB, RunFit, load_booster

        booster = load_booster(prior) if prior else None
        rounds = int(name.split("@")[1]) if "@" in name else RunFit().rounds
        learn = name != "xgb-prior-frozen"
        return PriorXGB(booster, learn=learn, fit=RunFit(rounds=rounds))
    if name in ("xgb-pre", "xgb-pre-frozen"):
        return pretrained_xgb(pretrain, name == "xgb-pre", depth)
    if name == "tcl-then-xgb-pre":
        from tcl.integrations.tvm.adapter import CostModel
        from tcl.integrations.tvm.blend import HANDOFF_AT, Blend

        learner = pretrained_xgb(pretrain, True, depth)
        return Blend(CostModel.from_checkpoint(checkpoint), learner, handoff_at=HANDOFF_AT)
    if name == "tcl-online":
        from tcl.integrations.tvm.adapter import CostModel

        return CostModel.from_checkpoint(checkpoint, online_steps=5)
    if name.startswith("tcl-gp"):
        from tcl.integrations.tvm.adapter import CostModel
        from tcl.training.task_gp import GPConfig

        name, _, explore = name.partition("~")
        shared = float(name.split("/")[1].rstrip("u")) if "/" in name else 0.0
        config = GPConfig(
            explore=float(explore or 0.0), shared=shared, shared_unmeasured=name.endswith("u")
        )
        return CostModel.from_checkpoint(checkpoint, learn=config)
    if name.startswith(("handoff@", "tcl+xgb@")):
        from tvm.s_tir import meta_schedule as ms

        from tcl.integrations.tvm.adapter import CostModel
        from tcl.integrations.tvm.blend import Blend

        learner = ms.cost_model.XGBModel(num_warmup_samples=0, num_tuning_cores=1)
        at = int(name.split("@")[1])
        if name.startswith("handoff@"):
            return Blend(CostModel.from_checkpoint(checkpoint), learner, handoff_at=at)
        return Blend(CostModel.from_checkpoint(checkpoint), learner, half_at=at)
    return make_cost_model(name, checkpoint if name.startswith("tcl") else None)


def score(pools: dict[str, Pool], measured: dict[str, list[int]]) -> float:
    """TenSet's score of the best programs found (module docstring)."""
    num = den = 0.0
    for key, pool in pools.items():
        finite = pool.costs[np.isfinite(pool.costs)]
        found = pool.costs[measured[key]]
        found = found[np.isfinite(found)]
        num += pool.weight * float(finite.min())
        den += pool.weight * float(found.min() if len(found) else finite.max())
    return num / den


def replay(model: Any, pools: dict[str, Pool], rounds: int, batch: int) -> list[float]:
    """The score after each round of ``model`` picking ``batch`` programs per task."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    measured: dict[str, list[int]] = {key: [] for key in pools}
    curve = []
    for _ in range(rounds):
        for key, pool in pools.items():
            taken = set(measured[key])
            left = [i for i in range(len(pool.costs)) if i not in taken]
            if not left:
                continue
            scores = np.asarray(model.predict(pool.context, [pool.candidates[i] for i in left]))
            picked = [left[j] for j in np.argsort(-scores, kind="stable")[:batch]]
            measured[key].extend(picked)
            results = [
                RunnerResult([float(pool.costs[i])], None)
                if np.isfinite(pool.costs[i])
                else RunnerResult(None, "failed in every run")
                for i in picked
            ]
            model.update(pool.context, [pool.candidates[i] for i in picked], results)
        curve.append(round(score(pools, measured), 4))
    return curve


def repeated(curves: dict[str, list[float]]) -> dict[str, dict[str, list[float]]]:
    """For each model run more than once (``NAME#K``), by round: the mean, least and most
    score of its runs, and the same of each run's mean over the rounds (``over_rounds``)."""
    groups: dict[str, list[list[float]]] = {}
    for name, curve in curves.items():
        groups.setdefault(name.partition("#")[0], []).append(curve)
    out = {}
    for name, runs in groups.items():
        if len(runs) > 1:
            table, means = np.asarray(runs), np.mean(runs, axis=1)
            out[name] = {
                "mean": np.round(table.mean(axis=0), 4).tolist(),
                "min": np.round(table.min(axis=0), 4).tolist(),
                "max": np.round(table.max(axis=0), 4).tolist(),
                "over_rounds": [round(float(f(means)), 4) for f in (np.mean, np.min, np.max)],
            }
    return out


def network_task_weights(network: str, platform_name: str) -> dict[str, float]:
    """How often each task of the zoo's ``network`` runs, by workload key, as tcl tune extracts
    them (fast math, the platform's target)."""
    from tcl import zoo
    from tcl.tuning import platforms
    from tcl.tuning.fast_math import fast_math
    from tcl.tuning.tune import task_weights
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get(network)
    example = zoo.example_input(net)
    mod = fast_math(import_network(zoo.module(net, example), example))
    return task_weights(extracted_tasks(mod, platforms.get(platform_name).tvm_target()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", required=True)
    parser.add_argument("--runs", help="glob of work directories (default: bench/out/tune/NET-*)")
    parser.add_argument("--platform", default="cpu-avx2-1t", help="the platform the runs tuned")
    parser.add_argument("--models", default="tcl,xgb,tcl+xgb,tcl+xgb@8")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--checkpoint", help="a tcl checkpoint (default: the base model)")
    parser.add_argument("--pretrain", help="collection directories xgb-pre is fitted on (a,b)")
    parser.add_argument("--pretrain-depth", type=int, default=10, help="xgb-pre's tree depth")
    parser.add_argument(
        "--prior", help="xgb-prior's and tcl-then-xgb-prior's booster (default: the packaged one)"
    )
    args = parser.parse_args()
    pattern = args.runs or str(ROOT / "bench" / "out" / "tune" / f"{args.network}-*")
    run_dirs = sorted(
        Path(p)
        for p in glob.glob(pattern)
        if any(Path(p, f"database_workload.json{gz}").exists() for gz in ("", ".gz"))
    )
    if not run_dirs:
        raise SystemExit(f"no MetaSchedule work directories match {pattern}")
    start = time.time()
    pools = load_pools(run_dirs, network_task_weights(args.network, args.platform))
    curves = {}
    for name in args.models.split(","):
        began = time.time()
        curves[name] = replay(
            make_model(
                name, args.checkpoint, args.pretrain, args.pretrain_depth, args.prior, args.batch
            ),
            pools,
            args.rounds,
            args.batch,
        )
        print(name, curves[name], f"{time.time() - began:.0f} s", flush=True)
    final = {name: curve[-1] for name, curve in curves.items()}
    print(
        json.dumps(
            {
                "network": args.network,
                "rounds": args.rounds,
                "batch": args.batch,
                "curves": curves,
                "final": final,
                "mean_over_rounds": {k: round(float(np.mean(v)), 4) for k, v in curves.items()},
                "final_over_tcl": {k: round(v / final["tcl"], 4) for k, v in final.items()}
                if "tcl" in final
                else None,
                "repeated": repeated(curves),
                "runs": [d.name for d in run_dirs],
                "checkpoint": Path(args.checkpoint).name if args.checkpoint else "base model",
                "pretrain": args.pretrain,
                "pretrain_depth": args.pretrain_depth,
                "prior": Path(args.prior).name if args.prior else "packaged",
                "tasks": len(pools),
                "programs": int(sum(len(p.costs) for p in pools.values())),
                "seconds": round(time.time() - start, 1),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
