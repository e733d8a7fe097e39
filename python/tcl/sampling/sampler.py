"""RDU sampling: choose the programs worth measuring by Representativeness (density among
nearest neighbours), Diversity (greedy k-center) and Uncertainty (cost-model disagreement).

Neighbours come from ``faiss-cpu`` (exact below ``EXACT_KNN_LIMIT`` points, IVF above); the
density and the greedy selection run in the C++ core (``tcl._core``) with the GIL released.
Selection is per task by default: programs of different tasks are never compared, and the
cost of k-center grows as n*k, which per task stays small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tcl import _core
from tcl.progress import bar as progress_bar
from tcl.records import rows_by_task

EXACT_KNN_LIMIT = 200_000


def knn(points: npt.ArrayLike, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(squared distances, indices), each (n, k), of every point's k nearest points (itself
    included, as FAISS returns it)."""
    import faiss

    x = np.ascontiguousarray(points, dtype=np.float32)
    n, dim = x.shape
    k = min(k, n)
    index: Any
    if n <= EXACT_KNN_LIMIT:
        index = faiss.IndexFlatL2(dim)
    else:
        lists = int(4 * np.sqrt(n))
        index = faiss.IndexIVFFlat(faiss.IndexFlatL2(dim), dim, lists)
        index.train(x[np.random.default_rng(0).choice(n, min(n, 64 * lists), replace=False)])
        index.nprobe = 8
    index.add(x)
    distances, indices = index.search(x, k)
    return distances, indices


def density(points: npt.ArrayLike, k: int = 10) -> np.ndarray:
    """Representativeness: 1 / mean distance to the k nearest neighbours, scaled to [0, 1]."""
    if len(points) < 2:  # type: ignore[arg-type]
        return np.ones(len(points))  # type: ignore[arg-type]
    return _core.density_from_knn(*knn(points, k + 1))


def kcenter(
    points: npt.ArrayLike,
    k: int,
    *,
    initial: list[int] | None = None,
    first: int = 0,
    num_threads: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Greedy farthest-point selection of ``k`` new points; returns (indices, radius before each
    pick). ``initial`` points count as selected already (the measured ones)."""
    selected, radius, _ = _core.greedy_select(
        np.ascontiguousarray(points, dtype=np.float32),
        k,
        list(initial or []),
        None,
        1.0,
        first,
        num_threads,
    )
    return selected, radius


@dataclass(frozen=True)
class RDUWeights:
    """Weights of the three criteria in the greedy score
    ``diversity * d(p)/max d + representativeness * density(p) + uncertainty * u(p)/max u``.

    The defaults won the weight sweep of bench/bench_data_efficiency.py (a source model from
    cpu-native-2t, 10% of each cpu-avx2-1t training task, two rounds, mean of 2 seeds; held-out
    top-1): 0.5/1/0.5 gave 0.567 against 0.541 for 0/1/0.5, 0.529 for 0.5/1/0, 0.507 for 1/1/1,
    0.487 for 0/1/1, 0.548 for uncertainty alone, 0.486 for diversity alone, 0.454 at random
    (all data: 0.575)."""

    representativeness: float = 0.5
    diversity: float = 1.0
    uncertainty: float = 0.5


def rdu_select(
    points: npt.ArrayLike,
    k: int,
    *,
    density_scores: npt.ArrayLike | None = None,
    uncertainty: npt.ArrayLike | None = None,
    weights: RDUWeights = RDUWeights(),
    initial: list[int] | None = None,
    num_threads: int = 0,
) -> np.ndarray:
    """``k`` new points chosen greedily by the RDU score (see :class:`RDUWeights`)."""
    x = np.ascontiguousarray(points, dtype=np.float32)
    n = len(x)
    rep = np.asarray(density_scores if density_scores is not None else density(x), dtype=np.float64)
    unc = np.zeros(n) if uncertainty is None else np.asarray(uncertainty, dtype=np.float64)
    if unc.max(initial=0.0) > 0:
        unc = unc / unc.max()
    bonus = weights.representativeness * rep + weights.uncertainty * unc
    first = int(np.argmax(bonus)) if n else 0
    selected, _, _ = _core.greedy_select(
        x,
        k,
        list(initial or []),
        np.ascontiguousarray(bonus),
        weights.diversity,
        first,
        num_threads,
    )
    return selected


def select_per_task(
    points: npt.ArrayLike,
    tasks: npt.ArrayLike,
    fraction: float,
    *,
    uncertainty: npt.ArrayLike | None = None,
    weights: RDUWeights = RDUWeights(),
    measured: npt.ArrayLike | None = None,
    neighbours: int = 10,
    progress: bool = False,
) -> np.ndarray:
    """Row indices chosen by RDU within each task: ``ceil(fraction * pool size)`` per task,
    minus what is already ``measured`` (a boolean mask) there. ``progress``: a bar of the
    tasks."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    x = np.ascontiguousarray(points, dtype=np.float32)
    task = np.asarray(tasks)
    done = np.zeros(len(x), dtype=bool) if measured is None else np.asarray(measured, dtype=bool)
    unc = None if uncertainty is None else np.asarray(uncertainty, dtype=np.float64)
    chosen = []
    groups = rows_by_task(task)
    for rows in progress_bar(progress, len(groups), "selecting", "task", groups):
        budget = int(np.ceil(fraction * len(rows))) - int(done[rows].sum())
        budget = min(budget, int((~done[rows]).sum()))
        if budget <= 0:
            continue
        local_initial = np.flatnonzero(done[rows]).tolist()
        picked = rdu_select(
            x[rows],
            budget,
            uncertainty=None if unc is None else unc[rows],
            weights=weights,
            initial=local_initial,
            num_threads=1,
        )
        chosen.append(rows[picked])
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)


def token_features(rs: Any) -> np.ndarray:
    """A fixed featurisation of schedules for when no cost model exists yet: the histogram of
    token kinds (hashed into 32 bins) and the mean and max of every numeric field."""
    kinds, fields, lengths = rs.kinds, rs.fields, np.maximum(rs.lengths, 1)
    hist = np.zeros((len(rs), 32), dtype=np.float32)
    rows = np.repeat(np.arange(len(rs)), kinds.shape[1])
    np.add.at(hist, (rows, (kinds % 32).ravel()), (kinds > 0).ravel().astype(np.float32))
    mask = (kinds > 0)[..., None]
    mean = (fields * mask).sum(1) / lengths[:, None]
    peak = np.where(mask, fields, -np.inf).max(1)
    peak[~np.isfinite(peak)] = 0.0
    return np.concatenate([hist / lengths[:, None], mean, peak], axis=1).astype(np.float32)


def model_uncertainty(
    model: Any, rs: Any, *, passes: int = 8, seed: int = 0, progress: bool = False
) -> np.ndarray:
    """MC-dropout disagreement: the standard deviation of the model's scores over ``passes``
    forward passes with dropout on, standardized per task (scores are only compared within a
    task). ``progress``: a bar of the passes."""
    import torch

    from tcl.model.inputs import length_sorted_batches

    torch.manual_seed(seed)
    model.train()  # dropout on
    runs = []
    with torch.no_grad():
        for _ in progress_bar(progress, passes, "MC dropout", "pass", range(passes)):
            run = np.zeros(len(rs))
            for rows, inputs in length_sorted_batches(model, rs):
                run[rows] = model(*inputs).double().cpu().numpy()
            runs.append(run)
    model.eval()
    scores = np.stack(runs)
    spread: np.ndarray = scores.std(0)
    task = rs.columns["task"]
    for t in np.unique(task):
        rows = task == t
        scale = scores[:, rows].std()
        spread[rows] = spread[rows] / scale if scale > 0 else 0.0
    return spread


def model_embeddings(model: Any, rs: Any) -> np.ndarray:
    """The cost model's pooled hidden states: the space where density and diversity are measured."""
    import torch

    from tcl.model.inputs import length_sorted_batches

    model.eval()
    embeddings = np.zeros((len(rs), model.config.d_model), dtype=np.float32)
    with torch.no_grad():
        for rows, inputs in length_sorted_batches(model, rs):
            embeddings[rows] = model.embed(*inputs).cpu().numpy()
    return embeddings
