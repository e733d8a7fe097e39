"""Rank helpers of tcl.training.metrics: what the blend, the ensemble and the noise check use."""

from __future__ import annotations

import numpy as np

from tcl.training.metrics import ranks, ranks_within_tasks


def test_ranks_are_scale_free_and_share_ties() -> None:
    x = np.array([3.0, -1.0, 2.0, 10.0])
    np.testing.assert_allclose(ranks(x), [2 / 3, 0.0, 1 / 3, 1.0])
    np.testing.assert_allclose(ranks(np.exp(x)), ranks(x))  # any increasing map
    np.testing.assert_allclose(ranks(np.array([1.0, 1.0, 2.0])), [0.25, 0.25, 1.0])
    assert ranks(np.array([5.0])).tolist() == [0.5]
    assert ranks(np.array([])).shape == (0,)


def test_ranks_within_tasks_rank_each_task_on_its_own() -> None:
    scores = np.array([5.0, 100.0, 1.0, -3.0, 0.0, 7.0])
    task = np.array([0, 1, 0, 1, 1, 2])
    out = ranks_within_tasks(scores, task)
    np.testing.assert_allclose(out[[0, 2]], [1.0, 0.0])
    np.testing.assert_allclose(out[[1, 3, 4]], [1.0, 0.0, 0.5])
    assert out[5] == 0.5  # a task of one program: no order to give
    # one task's scores moving by any amount leaves the other tasks' ranks alone
    shifted = scores.copy()
    shifted[[1, 3, 4]] *= 1000.0
    np.testing.assert_allclose(ranks_within_tasks(shifted, task)[[0, 2, 5]], out[[0, 2, 5]])
