"""How good a cost model's ranking is: the TenSet/TLP top-k score and pairwise accuracy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tcl.records import rows_by_task
from tcl.records.dataset import Dataset


def ranks(scores: np.ndarray) -> np.ndarray:
    """Scores as their ranks scaled to [0, 1] (ties share their mean rank)."""
    n = len(scores)
    if n < 2:
        return np.full(n, 0.5)
    order = np.argsort(scores, kind="stable")
    ranked = np.empty(n)
    sorted_scores = scores[order]
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
    for lo, hi in zip(starts, np.r_[starts[1:], n], strict=True):
        ranked[order[lo:hi]] = (lo + hi - 1) / 2.0
    return ranked / (n - 1)


def ranks_within_tasks(scores: np.ndarray, task: np.ndarray) -> np.ndarray:
    """Each score's rank among its task's (:func:`ranks`): comparable across models whose
    scores mean different things, e.g. to average an ensemble's."""
    ranked = np.zeros(len(scores))
    for rows in rows_by_task(task):
        ranked[rows] = ranks(scores[rows])
    return ranked


def _groups(task: np.ndarray) -> dict[int, np.ndarray]:
    return {int(task[rows[0]]): rows for rows in rows_by_task(task)}


def task_topk(costs: np.ndarray, scores: np.ndarray, k: int) -> float:
    """The best cost among the ``k`` programs with the highest scores, over the best cost."""
    top = np.argsort(-scores, kind="stable")[:k]
    return float(costs.min() / costs[top].min())


def topk_score(data: Dataset, scores: np.ndarray, network: str, k: int) -> float:
    """TenSet's top-k score of ``network``: sum_t w_t * best_t / sum_t w_t * best-of-top-k_t
    over the network's tasks, w_t the number of times task t runs in the network."""
    groups = _groups(data.records.columns["task"])
    costs = data.records.columns["mean_cost"]
    num = den = 0.0
    for task in data.tasks_of(network):
        rows = groups.get(task)
        if rows is None:
            continue
        weight = data.networks[task][network]
        best = float(costs[rows].min())
        num += weight * best
        den += weight * best / task_topk(costs[rows], scores[rows], k)
    return num / den if den > 0 else float("nan")


def pairwise_accuracy(data: Dataset, scores: np.ndarray) -> float:
    """Fraction of program pairs within a task (different costs) that the scores order right."""
    right = total = 0
    costs = data.records.columns["mean_cost"]
    for rows in _groups(data.records.columns["task"]).values():
        c, s = costs[rows], scores[rows]
        faster = c[:, None] < c[None, :]
        right += int((faster & (s[:, None] > s[None, :])).sum())
        total += int(faster.sum())
    return right / total if total else float("nan")


def mean_task_topk(data: Dataset, scores: np.ndarray, k: int = 1) -> float:
    """Unweighted mean over tasks of the per-task top-k ratio (validation, no networks needed)."""
    costs = data.records.columns["mean_cost"]
    ratios = [
        task_topk(costs[r], scores[r], k) for r in _groups(data.records.columns["task"]).values()
    ]
    return float(np.mean(ratios)) if ratios else float("nan")


def evaluate(
    data: Dataset, scores: np.ndarray, networks: Sequence[str] | None = None
) -> dict[str, object]:
    """Top-1/top-5 per network and pooled (their mean), and pairwise accuracy. Records that
    name no networks (no collection manifest) are pooled as the mean over tasks."""
    names = list(networks) if networks is not None else data.network_names()
    per = {
        n: {"top1": topk_score(data, scores, n, 1), "top5": topk_score(data, scores, n, 5)}
        for n in names
    }
    valid = [v for v in per.values() if np.isfinite(v["top1"])]
    if not names:
        pooled = {k: mean_task_topk(data, scores, int(k[3:])) for k in ("top1", "top5")}
    else:
        pooled = {
            k: float(np.mean([v[k] for v in valid])) if valid else float("nan")
            for k in ("top1", "top5")
        }
    return {
        **pooled,
        "pairwise_accuracy": pairwise_accuracy(data, scores),
        "per_network": per,
        "records": len(data.records),
    }
