"""The pre-fitted XGB: stored as data, scoring replayed programs, growing trees on a run's
measurements without changing the packaged ones."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tcl.errors import CheckpointError
from tcl.records import sample_data_path
from tcl.records.dataset import load_dataset

pytestmark = pytest.mark.tvm

PARAMS = {"max_depth": 3, "eta": 0.3, "min_child_weight": 0, "nthread": 1, "verbosity": 0}


@pytest.fixture(scope="module")
def features() -> dict[str, np.ndarray]:
    """Replayed features of the sample dataset (three tasks, 32 programs each)."""
    from tcl.integrations.tvm.prior_xgb import featurize

    data = load_dataset(sample_data_path())
    return featurize(data.records)


def _fit(features: dict[str, np.ndarray], tasks: list[int], rounds: int) -> Any:
    from tcl.integrations.tvm.prior_xgb import fit_booster, programs, task_labels

    keep = np.isin(features["groups"], tasks)
    xs = [x for x, k in zip(programs(features), keep, strict=True) if k]
    ys = task_labels(features["costs"][keep], features["groups"][keep])
    return fit_booster(xs, ys, PARAMS, rounds)


def test_task_labels_are_the_task_best_over_each_cost() -> None:
    from tcl.integrations.tvm.prior_xgb import task_labels

    labels = task_labels(np.array([2.0, 1.0, 4.0, 3.0]), np.array([0, 0, 1, 1]))
    assert labels == pytest.approx([0.5, 1.0, 0.75, 1.0])


def test_featurize_gives_every_program_its_blocks(features: dict[str, np.ndarray]) -> None:
    from tcl.integrations.tvm.prior_xgb import programs

    xs = programs(features)
    assert len(xs) == len(features["costs"]) == len(features["groups"]) > 0
    assert [len(x) for x in xs] == features["counts"].tolist()
    assert set(features["groups"].tolist()) == set(range(3))
    assert (features["costs"] > 0).all()


def test_record_scores_give_each_row_its_programs_score(features: dict[str, np.ndarray]) -> None:
    from tcl.integrations.tvm.prior_xgb import booster_scores, programs, record_scores

    records = load_dataset(sample_data_path()).records
    booster = _fit(features, [0, 1, 2], rounds=4)
    scores = record_scores(booster, records)
    rows = features["rows"]
    assert len(scores) == len(records) and np.isfinite(scores).all()
    assert sorted(rows.tolist()) == list(range(len(records)))  # the sample has no failures
    np.testing.assert_array_equal(scores[rows], booster_scores(booster, programs(features)))

    failed = records.select(np.ones(len(records), bool))  # a copy, two of its programs failed
    failed.columns["error"][[0, 40]] = 8
    rescored = record_scores(booster, failed)
    others = np.setdiff1d(np.arange(len(records)), [0, 40])
    np.testing.assert_array_equal(rescored[others], scores[others])
    assert np.isfinite(rescored).all() and rescored[[0, 40]].max() < rescored[others].min()


def test_booster_round_trips_as_gzipped_ubjson(
    features: dict[str, np.ndarray], tmp_path: Path
) -> None:
    from tcl.integrations.tvm.prior_xgb import booster_scores, load_booster, programs, save_booster

    booster = _fit(features, [0, 1], rounds=4)
    path = tmp_path / "prior.ubj.gz"
    assert save_booster(booster, path) == path.stat().st_size
    loaded = load_booster(path)
    xs = programs(features)
    assert loaded.num_boosted_rounds() == 4
    np.testing.assert_array_equal(booster_scores(loaded, xs), booster_scores(booster, xs))


@pytest.mark.parametrize(
    "content",
    [b"", b"not gzip", b"\x1f\x8b\x08\x00garbage", gzip.compress(b""), gzip.compress(b"{}")],
    ids=["empty", "not-gzip", "bad-deflate", "no-model", "not-a-model"],
)
def test_load_booster_names_the_file_it_cannot_read(tmp_path: Path, content: bytes) -> None:
    from tcl.integrations.tvm.prior_xgb import load_booster

    path = tmp_path / "bad.ubj.gz"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=r"bad\.ubj\.gz"):
        load_booster(path)


def _run(model: Any, task: int) -> tuple[Any, list[Any], list[float]]:
    """Measures every sample program of ``task`` through ``model.update``, as a tuner
    would; returns the tune context, the candidates and their costs, for scoring."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm.baselines import Replayer, _contexts

    data = load_dataset(sample_data_path())
    columns = data.records.columns
    rows = np.flatnonzero((columns["task"] == task) & (columns["error"] == 0))
    context, records, candidates = _contexts(Replayer(), data.records, [int(r) for r in rows])
    model.update(context, candidates, [RunnerResult(list(r.run_secs), None) for r in records])
    return context, candidates, [float(np.median([float(s) for s in r.run_secs])) for r in records]


def test_learning_grows_trees_on_the_prior_and_ranks_the_run_better(
    features: dict[str, np.ndarray],
) -> None:
    from tcl.integrations.tvm.prior_xgb import PriorXGB, RunFit, booster_scores, programs

    prior = _fit(features, [0, 1], rounds=3)
    before = booster_scores(prior, programs(features))
    model = PriorXGB(prior, fit=RunFit(rounds=5, max_depth=3, min_new=1), threads=1)
    context, candidates, costs = _run(model, task=2)
    assert model.booster.num_boosted_rounds() == 3 + 5
    # the packaged trees are as they were
    assert prior.num_boosted_rounds() == 3
    np.testing.assert_array_equal(booster_scores(prior, programs(features)), before)
    learnt = pairwise_accuracy_of(np.asarray(costs), model.predict(context, candidates))
    prior_only = PriorXGB(prior, learn=False).predict(context, candidates)
    # fitted on these very programs, the new trees must order them better than the prior
    assert learnt > pairwise_accuracy_of(np.asarray(costs), prior_only)


def pairwise_accuracy_of(costs: np.ndarray, scores: np.ndarray) -> float:
    """The share of program pairs of different cost that ``scores`` order as the costs do
    (a higher score for a lower cost)."""
    i, j = np.triu_indices(len(costs), 1)
    differ = costs[i] != costs[j]
    right = (scores[i] > scores[j]) == (costs[i] < costs[j])
    return float(right[differ].mean())


def test_frozen_model_keeps_its_booster(features: dict[str, np.ndarray]) -> None:
    from tcl.integrations.tvm.prior_xgb import PriorXGB

    prior = _fit(features, [0, 1], rounds=2)
    model = PriorXGB(prior, learn=False)
    _run(model, task=2)
    assert model.booster is prior and prior.num_boosted_rounds() == 2


def test_packaged_prior_is_small_and_scores_programs(features: dict[str, np.ndarray]) -> None:
    from tcl.integrations.tvm.baselines import make_cost_model
    from tcl.integrations.tvm.prior_xgb import booster_scores, prior_xgb_path, programs

    path = prior_xgb_path("cpu")
    assert path.stat().st_size <= 350_000
    model = make_cost_model("xgb-prior")
    scores = booster_scores(model.booster, programs(features))
    assert np.isfinite(scores).all() and np.ptp(scores) > 0
    with pytest.raises(ValueError, match="no pre-fitted XGB for device 'rocm'"):
        prior_xgb_path("rocm")
