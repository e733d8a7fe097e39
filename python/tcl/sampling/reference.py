"""numpy twins of the C++ sampling core (cpp/sampling.cc): the same algorithm, readable, slow."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def density_from_knn(distances: npt.ArrayLike, indices: npt.ArrayLike) -> np.ndarray:
    d = np.sqrt(np.maximum(np.asarray(distances, dtype=np.float64), 0.0))
    idx = np.asarray(indices, dtype=np.int64)
    n = idx.shape[0]
    real = (idx >= 0) & (idx != np.arange(n)[:, None])
    counts = real.sum(1)
    sums = np.where(real, d, 0.0).sum(1)
    density = np.zeros(n)
    has = counts > 0
    density[has] = 1.0 / (1e-12 + sums[has] / counts[has])
    return density / density.max() if n and density.max() > 0 else density


def greedy_select(
    points: npt.ArrayLike,
    k: int,
    initial: list[int],
    bonus: npt.ArrayLike | None,
    diversity_weight: float,
    first: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.asarray(points, dtype=np.float64)
    n = x.shape[0]
    extra = np.zeros(n) if bonus is None else np.asarray(bonus, dtype=np.float64)
    min_distance = np.full(n, np.inf)
    taken = np.zeros(n, dtype=bool)

    def add(center: int) -> None:
        taken[center] = True
        np.minimum(min_distance, np.sqrt(((x - x[center]) ** 2).sum(1)), out=min_distance)

    for i in dict.fromkeys(initial):
        add(i)
    selected, radii = [], []
    for _ in range(k):
        if np.isinf(min_distance).all():
            pick, radius = first, np.inf
        else:
            radius = float(min_distance[~taken].max())
            scaled = min_distance / radius if radius > 0 else np.zeros(n)
            score = np.where(taken, -np.inf, diversity_weight * scaled + extra)
            pick = int(np.argmax(score))  # the first maximum: ties go to the smallest index
        selected.append(pick)
        radii.append(radius)
        add(pick)
    return np.asarray(selected, dtype=np.int64), np.asarray(radii), min_distance
