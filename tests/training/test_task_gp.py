"""The run's Gaussian process per task: the model's score until a task is measured, then what
the measurements say about programs like the measured ones, and nothing about other tasks."""

from __future__ import annotations

import numpy as np
import pytest

from tcl.training.task_gp import GPConfig, TaskGP


def _two_families(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Embeddings of two well-separated program families (first n: family A, then B)."""
    a = rng.normal(0.0, 0.3, (n, 4)) + np.array([3.0, 0.0, 0.0, 0.0])
    b = rng.normal(0.0, 0.3, (n, 4)) - np.array([3.0, 0.0, 0.0, 0.0])
    return np.concatenate([a, b]), np.repeat([0, 1], n)


def test_an_unmeasured_task_is_ranked_by_the_score() -> None:
    gp = TaskGP()
    scores = np.array([0.3, -1.0, 2.0, 0.5])
    mean, deviation = gp.predict("t", scores, np.zeros((4, 3)))
    np.testing.assert_allclose(mean, scores)  # slope 1 until something is measured
    assert (deviation > 0).all()
    # two programs are not yet min_programs: the task's own residual is not learnt
    gp.add("t", scores[:2], np.eye(4, 3)[:2], np.array([1.0, 2.0]))
    mean, _ = gp.predict("t", scores, np.eye(4, 3))
    assert np.argsort(mean).tolist() == np.argsort(scores).tolist()


def test_it_learns_which_family_the_model_overrates() -> None:
    """The model scores both families alike; family B runs 4x slower. After measuring three
    programs of each, every unmeasured B program ranks below every unmeasured A program."""
    rng = np.random.default_rng(0)
    embeddings, family = _two_families(10, rng)
    scores = rng.normal(0.0, 0.1, 20)  # no signal between the families
    costs = np.exp(-scores) * np.where(family == 1, 4.0, 1.0)
    gp = TaskGP()
    measured = np.array([0, 1, 2, 10, 11, 12])
    gp.add("t", scores[measured], embeddings[measured], costs[measured])
    left = np.setdiff1d(np.arange(20), measured)
    mean, _ = gp.predict("t", scores[left], embeddings[left])
    assert mean[family[left] == 0].min() > mean[family[left] == 1].max()
    # the measured programs themselves are known better than an unseen far-away one
    _, near = gp.predict("t", scores[measured], embeddings[measured])
    _, far = gp.predict("t", np.zeros(1), np.full((1, 4), 30.0))
    assert near.max() < far[0]
    # another task learns nothing from this one's residual: it is ranked by the score
    other, _ = gp.predict("u", scores[left], embeddings[left])
    np.testing.assert_allclose(other, scores[left])


def test_the_slope_follows_the_run_and_never_turns_the_score_around() -> None:
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(12, 4))
    scores = np.linspace(-1, 1, 12)
    gp = TaskGP()
    gp.add("t", scores, embeddings, np.exp(-2.0 * scores))  # -log cost = 2 x score
    assert gp.slope == pytest.approx(2.0)
    gp = TaskGP()
    gp.add("t", scores, embeddings, np.exp(scores))  # the model has it backwards
    assert gp.slope == 0.0
    # a task of its own still ranks by the score, not by nothing
    np.testing.assert_allclose(gp.predict("u", scores, embeddings)[0], scores)
    # far from every measured program, the residual is nil: the score breaks the tie
    far = embeddings + 100.0
    assert np.argsort(gp.predict("t", scores, far)[0]).tolist() == list(range(12))


def test_failed_measurements_are_left_out_and_explore_adds_the_deviation() -> None:
    rng = np.random.default_rng(2)
    embeddings = rng.normal(size=(6, 4))
    gp = TaskGP(GPConfig(explore=1.5))
    gp.add("t", np.zeros(6), embeddings, np.array([1.0, np.inf, 0.0, np.nan, 2.0, -1.0]))
    assert len(gp.tasks["t"]) == 2
    gp.add("t", np.zeros(2), embeddings[:2], np.array([np.inf, np.nan]))  # nothing ran
    assert len(gp.tasks["t"]) == 2
    gp.add("t", np.ones(2), embeddings[2:4], np.array([3.0, 4.0]))
    mean, deviation = gp.predict("t", np.zeros(6), embeddings)
    np.testing.assert_allclose(gp.rank_scores("t", np.zeros(6), embeddings), mean + 1.5 * deviation)


def test_the_shared_correction_carries_what_other_tasks_measured() -> None:
    """Every task's family B runs 4x slower than the model says. Without ``shared`` a new task
    learns nothing of it from the others; with it, the new task's unmeasured B programs rank
    below its A programs before any of its own is measured, and a task the model ranked
    right keeps the model's order."""
    rng = np.random.default_rng(3)
    runs = {"own": TaskGP(), "shared": TaskGP(GPConfig(shared=4.0, shared_unmeasured=True))}
    for task in ("a", "b", "c"):
        embeddings, family = _two_families(6, rng)
        scores = rng.normal(0.0, 0.1, 12)
        costs = np.exp(-scores) * np.where(family == 1, 4.0, 1.0)
        for gp in runs.values():
            gp.add(task, scores, embeddings, costs)
    embeddings, family = _two_families(8, rng)
    scores = rng.normal(0.0, 0.1, 16)
    shared, _ = runs["shared"].predict("new", scores, embeddings)
    assert shared[family == 0].min() > shared[family == 1].max()
    own, _ = runs["own"].predict("new", scores, embeddings)
    np.testing.assert_allclose(own, scores)
    assert len(runs["own"].shared) == 0
    # the correction is a ridge: with the score right on every task there is nothing to correct
    gp = TaskGP(GPConfig(shared=4.0))
    for task in ("a", "b"):
        embeddings, _ = _two_families(6, rng)
        scores = rng.normal(size=12)
        gp.add(task, scores, embeddings, np.exp(-scores))
    np.testing.assert_allclose(gp.shared, 0.0, atol=1e-9)
    order = np.argsort(gp.predict("new", scores, embeddings)[0])
    assert order.tolist() == np.argsort(scores).tolist()
    # by default a task with nothing measured keeps the model's score, correction or not
    assert runs["shared"].config.shared_unmeasured and not GPConfig().shared_unmeasured
    default = TaskGP(GPConfig(shared=4.0))
    default.tasks, default.shared = runs["shared"].tasks, runs["shared"].shared
    np.testing.assert_allclose(default.predict("new", scores, embeddings)[0], scores)
