"""Learning during a run: a Gaussian process per task on the cost model's embedding, with the
model's own score as its mean.

The pre-trained model ranks a task's programs from the first round, but it is wrong in ways
that repeat within a task (a family of schedules it overrates on this CPU, a loop order it has
never seen measured); the run's measurements show where. ``TaskGP`` keeps every measured
program of the run per task, as (score, embedding, log cost), and predicts a candidate's
``-log(cost)`` as

    a * score + w . embedding + b_task + GP residual(embedding)

``a`` is one slope for the whole run (the model's scores have one scale for every task; fitted
over all tasks' measurements, centred per task, never negative); ``w`` (``shared``, off by
default) is one linear correction on the embedding for the whole run, a ridge regression of
what the scaled score got wrong over every task's measured programs (centred per task): where
the model overrates a kind of schedule on this CPU in every task, a task learns it from the
others' measurements, as a tuner's XGB fitted on the whole network does; ``b_task`` centres
the task; the residual is a GP regression, in the model's embedding space, of what the scaled
score got wrong on this task's measured programs (a squared-exponential kernel whose length is
the median distance between them, variance pooled over the run's tasks). A program like the
ones the model overrated is marked down, one far from every measured program keeps the model's
score. With fewer than ``min_programs`` measured programs of a task, the task is ranked by the
score alone, whatever the slope (a slope of zero, fitted on other tasks, would rank it by
nothing).

Every quantity is the run's own: nothing is trained before the run, nothing is kept after it,
and it costs a few small linear solves per measured batch (``n`` programs of a task: an
``n x n`` Cholesky factorization). The predictive deviation comes with the mean, for a
tuner that wants to know how sure the model is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Share of the residual variance that is noise (the measurements are repeatable to ~1%, but a
# 64-wide embedding cannot separate every pair of programs the measurements separate).
NOISE_SHARE = 0.2
# Weight of the model's score that stays when the run's slope is zero (the model ranked this
# run's measured programs backwards): small enough to change no order but a tie.
TIE_BREAK = 1e-6


@dataclass(frozen=True)
class GPConfig:
    min_programs: int = 3  # measured programs of a task before its own residual is learnt
    noise_share: float = NOISE_SHARE
    explore: float = 0.0  # predicted mean + explore x deviation (0: the mean)
    # The run-wide linear correction (0: none); its ridge penalty is this many programs' worth
    # of the embedding's mean variance, so it follows the data once many more are measured.
    shared: float = 0.0
    # The correction also ranks a task none of whose programs is measured (it moved the first
    # picks down in the replay: off).
    shared_unmeasured: bool = False


@dataclass
class _Task:
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))
    embeddings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    targets: np.ndarray = field(default_factory=lambda: np.zeros(0))  # -log(cost)

    def __len__(self) -> int:
        return len(self.targets)


@dataclass
class _Fit:
    """A task's posterior: the measured embeddings, their weights and the Cholesky factor."""

    offset: float
    embeddings: np.ndarray
    alpha: np.ndarray
    chol: np.ndarray
    length: float


class TaskGP:
    """Every measured program of a run, per task; predicts ``-log(cost)`` (larger is faster)."""

    def __init__(self, config: GPConfig | None = None) -> None:
        self.config = config or GPConfig()
        self.tasks: dict[str, _Task] = {}
        self.slope = 1.0
        self.shared = np.zeros(0)  # w; empty while there is none
        self.variance = 1.0
        self._fits: dict[str, _Fit | None] = {}

    def add(self, task: str, scores: np.ndarray, embeddings: np.ndarray, costs: np.ndarray) -> None:
        """Adds measured programs of ``task`` (``costs`` in seconds; failed ones, not finite or
        not positive, are left out) and refits the run's slope and variance."""
        good = np.isfinite(costs) & (costs > 0)
        if not good.any():
            return
        old = self.tasks.get(task)
        new = _Task(
            np.asarray(scores, dtype=np.float64)[good],
            np.asarray(embeddings, dtype=np.float64)[good],
            -np.log(np.asarray(costs, dtype=np.float64)[good]),
        )
        if old is not None and len(old):
            new = _Task(
                np.concatenate([old.scores, new.scores]),
                np.concatenate([old.embeddings, new.embeddings]),
                np.concatenate([old.targets, new.targets]),
            )
        self.tasks[task] = new
        self._refit_run()

    def _refit_run(self) -> None:
        """The slope of -log(cost) on the score, and the residual variance, over every task
        (each centred on its own means: tasks differ in size, not in what a score means)."""
        measured = [t for t in self.tasks.values() if len(t) >= 2]
        if not measured:
            return
        s = np.concatenate([t.scores - t.scores.mean() for t in measured])
        y = np.concatenate([t.targets - t.targets.mean() for t in measured])
        self.slope = max(0.0, float(s @ y) / max(float(s @ s), 1e-12))
        residual = y - self.slope * s
        if self.config.shared > 0:
            e = np.concatenate([t.embeddings - t.embeddings.mean(0) for t in measured])
            self.shared = _ridge(e, residual, self.config.shared)
            residual = residual - e @ self.shared
        self.variance = max(float(residual @ residual) / len(residual), 1e-6)
        self._fits.clear()  # every task's posterior depends on the slope and variance

    def _fit(self, task: str) -> _Fit | None:
        if task in self._fits:
            return self._fits[task]
        t = self.tasks.get(task)
        fit = None
        if t is not None and len(t) >= self.config.min_programs:
            explained = self.slope * t.scores + self._shared(t.embeddings)
            offset = float(np.mean(t.targets - explained))
            residual = t.targets - explained - offset
            distances = _sq_distances(t.embeddings, t.embeddings)
            length = float(np.sqrt(np.median(distances[np.triu_indices(len(t), 1)])))
            length = max(length, 1e-6)
            gram = self.variance * np.exp(-distances / (2 * length**2))
            gram[np.diag_indices_from(gram)] += self.config.noise_share * self.variance
            chol = np.linalg.cholesky(gram)
            alpha = np.linalg.solve(chol.T, np.linalg.solve(chol, residual))
            fit = _Fit(offset, t.embeddings, alpha, chol, length)
        self._fits[task] = fit
        return fit

    def predict(
        self, task: str, scores: np.ndarray, embeddings: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(mean, deviation) of ``-log(cost)`` for candidates of ``task``; before the task has
        ``min_programs`` measured programs, the slope-scaled score and the prior deviation."""
        scores = np.asarray(scores, dtype=np.float64)
        embeddings = np.asarray(embeddings, dtype=np.float64)
        fit = self._fit(task)
        if fit is None:
            deviation = np.full(len(scores), np.sqrt(self.variance))
            if not len(self.shared) or not self.config.shared_unmeasured:
                return scores, deviation  # as it is: a slope fitted on other tasks may be 0
            return (self.slope + TIE_BREAK) * scores + self._shared(embeddings), deviation
        cross = self.variance * np.exp(
            -_sq_distances(embeddings, fit.embeddings) / (2 * fit.length**2)
        )
        # ties (a zero slope, candidates far from every measured one) go to the better score
        mean = (self.slope + TIE_BREAK) * scores + self._shared(embeddings)
        mean = mean + fit.offset + cross @ fit.alpha
        v = np.linalg.solve(fit.chol, cross.T)
        variance = np.maximum(self.variance - (v * v).sum(0), 0.0)
        return mean, np.sqrt(variance)

    def _shared(self, embeddings: np.ndarray) -> np.ndarray:
        """The run-wide linear correction of ``embeddings`` (zeros while there is none)."""
        if not len(self.shared):
            return np.zeros(len(embeddings))
        return np.asarray(embeddings @ self.shared)

    def rank_scores(self, task: str, scores: np.ndarray, embeddings: np.ndarray) -> np.ndarray:
        """What the tuner ranks by: the mean, plus ``explore`` deviations."""
        mean, deviation = self.predict(task, scores, embeddings)
        return np.asarray(mean + self.config.explore * deviation)


def _ridge(x: np.ndarray, y: np.ndarray, prior_programs: float) -> np.ndarray:
    """Ridge regression weights of ``y`` on ``x`` (both centred), the penalty ``prior_programs``
    times the mean variance of a column: scale-free in the embedding's units."""
    gram = x.T @ x
    penalty = prior_programs * max(float(np.trace(gram)) / (len(x) * x.shape[1]), 1e-12)
    gram[np.diag_indices_from(gram)] += penalty
    return np.asarray(np.linalg.solve(gram, x.T @ y))


def _sq_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (len(a), len(b)), never negative."""
    d: np.ndarray = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.asarray(np.maximum(d, 0.0))
