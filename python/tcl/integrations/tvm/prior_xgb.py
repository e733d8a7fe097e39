"""MetaSchedule's XGB over its program features, fitted beforehand on tcl's collected records,
that keeps learning during a run.

MetaSchedule's XGB starts every run from nothing: its first round is picked at random, and it
needs a few rounds of a task's measurements before it ranks that task's candidates well. Fitted
beforehand on the records tcl collects (random and search-drawn programs of the zoo's training
networks on other hosts), the same booster ranks a new network's first candidates on a host it
has never seen better than tcl's sequence model does (bench/README.md, *A pre-fitted XGB in
the tuner*). During a run it learns as the run measures: every refit grows a few trees on the
run's own measurements on top of the packaged ones, so the packaged trees give the starting
ranking and the new trees correct it where this host and these tasks differ (a residual fit;
the packaged trees are never changed).

Labels are MetaSchedule's: a program's score is its task's best cost over its cost, and a
program's prediction is the sum of its blocks' (``PackSum``). The booster is stored as gzipped
UBJSON, which XGBoost reads as data: loading it runs no code.
"""

from __future__ import annotations

import gzip
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.cost_model import PyCostModel

from tcl.integrations.tvm.measure import task_of
from tcl.integrations.tvm.patches import enters_tvm
from tcl.packaged import packaged_file
from tcl.records import RecordSet

# The packaged boosters, by the device their programs run on.
PRIOR_XGB = {"cpu": "prior_xgb_cpu.ubj.gz"}


@dataclass(frozen=True)
class RunFit:
    """How a run's measurements are fitted on top of the packaged trees: ``rounds`` trees of
    at most ``max_depth`` levels, each scaled by ``eta``; a refit once the run's measurements
    have grown by ``growth`` (a fraction) since the last one, or by at least ``min_new``."""

    rounds: int = 20
    max_depth: int = 6
    eta: float = 0.2
    growth: float = 0.2
    min_new: int = 32


def prior_xgb_path(device: str = "cpu") -> Path:
    """The packaged pre-fitted booster for programs that run on ``device``
    (``scripts/fit_prior_xgb.py`` made it; the held-out networks were not fitted on)."""
    return packaged_file(PRIOR_XGB, device, "pre-fitted XGB", "run scripts/fit_prior_xgb.py")


def load_booster(path: str | Path) -> Any:
    """A booster saved by :func:`save_booster` (gzipped UBJSON; read as data, never run)."""
    import xgboost as xgb

    from tcl.errors import CheckpointError

    try:
        raw = gzip.decompress(Path(path).read_bytes())
        if not raw:  # XGBoost aborts the process on an empty model rather than raising
            raise EOFError("it holds no model")
        booster = xgb.Booster()
        booster.load_model(bytearray(raw))
    except (OSError, EOFError, zlib.error, xgb.core.XGBoostError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"{path}: not a gzipped XGBoost model: {first}") from None
    return booster


def save_booster(booster: Any, path: str | Path) -> int:
    """Writes ``booster`` as gzipped UBJSON; returns the bytes written."""
    data = gzip.compress(bytes(booster.save_raw("ubj")), compresslevel=9, mtime=0)
    Path(path).write_bytes(data)
    return len(data)


def task_labels(costs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """MetaSchedule's labels: each program's task best cost over its own (1.0 for the best;
    ``groups`` says which task each program is of)."""
    best = np.full(int(groups.max()) + 1 if len(groups) else 0, np.inf)
    np.minimum.at(best, groups, costs)
    return np.asarray(best[groups] / costs, dtype=np.float64)


def fit_booster(
    xs: list[np.ndarray], ys: np.ndarray, params: dict[str, Any], rounds: int, prior: Any = None
) -> Any:
    """``rounds`` trees fitted to ``ys`` by MetaSchedule's pack-sum squared error (each
    program's prediction the sum of its blocks', weighted by its label), grown on top of
    ``prior``'s trees when given (``prior`` itself is left as it was)."""
    import xgboost as xgb
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import PackSum

    packed = PackSum(xs=xs, ys=ys)

    def objective(predicted: np.ndarray, _: Any) -> tuple[np.ndarray, np.ndarray]:
        gradient, hessian = packed.obj_square_error(predicted)
        return np.asarray(gradient), np.asarray(hessian)

    base = None if prior is None else prior.copy()
    return xgb.train(params, packed.dmatrix, num_boost_round=rounds, obj=objective, xgb_model=base)


def booster_scores(booster: Any, xs: list[np.ndarray]) -> np.ndarray:
    """Each program's predicted score: the sum of its blocks' predictions."""
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import PackSum

    packed = PackSum(xs=xs, ys=None)
    return np.asarray(packed.predict_with_score(booster.predict(packed.dmatrix)), np.float64)


@enters_tvm
def featurize(records: RecordSet) -> dict[str, np.ndarray]:
    """MetaSchedule's block features of ``records``' error-free programs, replayed (their
    traces applied to their workloads), with their costs (the median run) and which task of
    ``records`` each is of (``groups``, numbered from 0); ``counts``: each program's blocks;
    ``rows``: each program's row in ``records``."""
    from tvm.s_tir.meta_schedule.feature_extractor import FeatureExtractor

    from tcl.integrations.tvm.baselines import Replayer, _contexts

    ok = np.flatnonzero(records.columns["error"] == 0)
    replayer, extractor = Replayer(), FeatureExtractor.create("per-store-feature")
    blocks, counts, costs, groups, kept = [], [], [], [], []
    tasks = records.columns["task"]
    for group, task in enumerate(np.unique(tasks[ok])):
        rows = [int(r) for r in ok[tasks[ok] == task]]
        context, tuned, candidates = _contexts(replayer, records, rows)
        features = extractor.extract_from(context, candidates)
        for row, record, x in zip(rows, tuned, features, strict=True):
            x = x.numpy().astype(np.float32)
            if len(x):
                kept.append(row)
                blocks.append(x)
                counts.append(len(x))
                costs.append(float(np.median([float(s) for s in record.run_secs])))
                groups.append(group)
    return {
        "blocks": np.concatenate(blocks) if blocks else np.zeros((0, 0), np.float32),
        "counts": np.asarray(counts, np.int64),
        "costs": np.asarray(costs),
        "groups": np.asarray(groups, np.int64),
        "rows": np.asarray(kept, np.int64),
    }


def record_scores(booster: Any, records: RecordSet) -> np.ndarray:
    """``booster``'s score of every row of ``records``, higher for faster; a program that has no
    features (an error, no blocks) scores below every other."""
    features = featurize(records)
    out = np.full(len(records), -np.inf)
    if len(features["rows"]):
        out[features["rows"]] = booster_scores(booster, programs(features))
        out[np.isneginf(out)] = out[np.isfinite(out)].min() - 1.0
    return out


def programs(features: dict[str, np.ndarray]) -> list[np.ndarray]:
    """:func:`featurize`'s blocks split into each program's."""
    return np.split(features["blocks"], np.cumsum(features["counts"])[:-1])


@derived_object
class PriorXGB(PyCostModel):
    """A cost model for MetaSchedule: the pre-fitted ``prior`` booster (default: the packaged
    one for ``device``), with trees fitted on the run's measurements grown on top of it as the
    run goes (``fit``; ``learn=False``: the prior alone, as it was packaged)."""

    @enters_tvm
    def __init__(
        self,
        prior: Any = None,
        *,
        device: str = "cpu",
        learn: bool = True,
        fit: RunFit = RunFit(),
        threads: int = 2,
    ) -> None:
        from tvm.s_tir.meta_schedule.feature_extractor import FeatureExtractor

        super().__init__()
        self.prior = prior if prior is not None else load_booster(prior_xgb_path(device))
        self.booster = self.prior
        self.learn, self.fit, self.threads = learn, fit, threads
        self.extractor = FeatureExtractor.create("per-store-feature")
        # the run's measurements by task: block features and costs of each program
        self.features: dict[str, list[np.ndarray]] = OrderedDict()
        self.costs: dict[str, list[float]] = OrderedDict()
        self.measured = 0
        self.fitted_at = 0

    def _features(self, context: Any, candidates: list[Any]) -> list[np.ndarray]:
        return [
            x.numpy().astype("float32") for x in self.extractor.extract_from(context, candidates)
        ]

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        if not candidates:
            return np.zeros(0)
        xs = self._features(context, candidates)
        scores = np.zeros(len(xs))
        kept = [i for i, x in enumerate(xs) if len(x)]
        if kept:
            scores[kept] = booster_scores(self.booster, [xs[i] for i in kept])
        return scores

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        if not self.learn or not candidates:
            return
        task = task_of(context)
        for x, result in zip(self._features(context, candidates), results, strict=True):
            if len(x) and result.error_msg is None and result.run_secs:
                self.features.setdefault(task, []).append(x)
                self.costs.setdefault(task, []).append(
                    float(np.median([float(s) for s in result.run_secs]))
                )
                self.measured += 1
        new = self.measured - self.fitted_at
        if new > 0 and (new >= self.fit.min_new or new >= self.fit.growth * self.fitted_at):
            self._refit()

    def _refit(self) -> None:
        """The packaged trees and ``fit.rounds`` new ones fitted on all the run has measured."""
        xs = [x for task in self.features for x in self.features[task]]
        costs = np.asarray([c for task in self.costs for c in self.costs[task]])
        groups = np.repeat(np.arange(len(self.costs)), [len(c) for c in self.costs.values()])
        params = {
            "max_depth": self.fit.max_depth,
            "eta": self.fit.eta,
            "min_child_weight": 0,
            "gamma": 0.0001,
            "nthread": self.threads,
            "verbosity": 0,
        }
        self.booster = fit_booster(
            xs, task_labels(costs, groups), params, self.fit.rounds, self.prior
        )
        self.fitted_at = self.measured

    def load(self, path: str) -> None:
        self.prior = self.booster = load_booster(path)

    def save(self, path: str) -> None:
        save_booster(self.booster, path)
