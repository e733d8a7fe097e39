"""What a cost model already said about a program, kept so that a search does not pay for it
twice.

MetaSchedule's evolutionary search scores its whole population in every generation (five times
a round at its 4 generations), and a program that survives a generation unmutated, or that the
next round draws again from the database's best, is scored again: in a 128-trial BERT-tiny run
of ``tcl-then-xgb``, 28% of the scores asked for. A score depends only on the program and the
model: its trace (every decision included) applied to its task's module, for its target. So a
frozen model's answers are kept for the whole run, and a learning model's until it next learns
(:meth:`ScoreCache.forget`).

A program's key is a digest of its trace as TVM prints it (0.1-0.2 ms a program on BERT-tiny's
tasks), where the scoring itself costs about 0.5 ms a program for tcl's model (the trace's JSON
written by MetaSchedule's record writer, ``trace_texts``, 0.2 ms; the model 0.1 ms) and 3 ms
for XGB's feature extraction, on one core of a Zen 3 (``bench/bench_scoring.py``). What it saves
in a run: ``bench/bench_tune_profile.py``'s ``KIND:uncached`` (bench/README.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from tcl.integrations.tvm.measure import task_of


def context_key(context: Any) -> str:
    """What a score depends on besides the program: the task (its module's structural hash)
    and the target (a model that reads a platform descriptor scores each target apart)."""
    return f"{task_of(context)} {getattr(context, 'target', None)}"


def program_key(candidate: Any) -> bytes:
    """A program's identity within its task: a digest of its whole trace, decisions included
    (TVM's Python rendering of it, which prints every instruction and decision)."""
    return hashlib.blake2b(str(candidate.sch.trace).encode(), digest_size=16).digest()


class ScoreCache:
    """Per tune context (:func:`context_key`), what a model answered for each program: a row of
    floats (a score, or a score and an embedding). ``hits`` and ``misses`` count the programs
    asked for."""

    def __init__(self) -> None:
        self.tasks: dict[str, dict[bytes, np.ndarray]] = {}
        self.hits = 0
        self.misses = 0

    def rows(
        self, context: Any, candidates: list[Any], compute: Callable[[list[Any]], np.ndarray]
    ) -> np.ndarray:
        """The rows (len(candidates), width) of ``candidates`` of ``context``'s task: kept ones
        as kept, the others from one call of ``compute`` on them (each distinct program once),
        which must return one row per program it is given."""
        known = self.tasks.setdefault(context_key(context), {})
        keys = [program_key(c) for c in candidates]
        missing: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in known and key not in missing:
                missing[key] = i
        if missing:
            computed = np.asarray(compute([candidates[i] for i in missing.values()]))
            computed = computed.reshape(len(missing), -1)
            for key, row in zip(missing, computed, strict=True):
                known[key] = row
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if not keys:
            return np.zeros((0, 1))
        return np.stack([known[key] for key in keys])

    def scores(
        self, context: Any, candidates: list[Any], compute: Callable[[list[Any]], np.ndarray]
    ) -> np.ndarray:
        """:meth:`rows` of a model that answers one score a program (float64)."""
        return self.rows(context, candidates, compute)[:, 0].astype(np.float64)

    def forget(self) -> None:
        """Drops every kept answer: the model has learnt, and its answers have changed."""
        self.tasks.clear()


__all__ = ["ScoreCache", "context_key", "program_key"]
