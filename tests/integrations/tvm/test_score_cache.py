"""tcl.integrations.tvm.score_cache: each program of a task scored once until the model learns,
and the cost models that use it answer as they did without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tcl import model as models

pytestmark = pytest.mark.tvm


def _task(n: int, mcpu: str = "x86-64", programs: int = 12) -> tuple[Any, list[Any]]:
    """A tune context of an n x n matmul and ``programs`` random programs of it, the first
    four of them repeated at the end (a search asks about a program again)."""
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": 1})
    candidates = tm.random_candidates(mod, target, programs, seed=0)
    return ms.TuneContext(mod=mod, target=target, task_name="main"), candidates + candidates[:4]


def _by_trace(candidates: list[Any]) -> np.ndarray:
    """A score that is a function of the program alone (its trace's JSON key)."""
    from tcl.integrations.tvm import measure as tm

    return np.array([len(tm.trace_key(tm.trace_json(c.sch))) % 97 / 97 for c in candidates])


def test_each_program_is_scored_once_per_task_until_forgotten() -> None:
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.score_cache import ScoreCache

    context, candidates = _task(32)
    other, others = _task(48)
    distinct = len({tm.trace_key(tm.trace_json(c.sch)) for c in candidates})
    asked: list[int] = []

    def compute(cs: list[Any]) -> np.ndarray:
        asked.append(len(cs))
        return _by_trace(cs)

    cache = ScoreCache()
    np.testing.assert_array_equal(cache.scores(context, candidates, compute), _by_trace(candidates))
    assert asked == [distinct] and cache.misses == distinct
    assert cache.hits == len(candidates) - distinct
    # asked again, and in another order: nothing computed, the same answers
    again = candidates[::-1]
    np.testing.assert_array_equal(cache.scores(context, again, compute), _by_trace(again))
    assert asked == [distinct]
    # another task's programs are its own
    cache.scores(other, others, compute)
    assert len(asked) == 2
    cache.forget()
    cache.scores(context, candidates[:3], compute)
    assert asked[-1] == 3


def test_a_model_that_reads_the_target_is_kept_apart_per_target() -> None:
    from tcl.integrations.tvm.score_cache import ScoreCache

    (generic, candidates), (avx2, same) = _task(32), _task(32, "core-avx2")
    cache = ScoreCache()
    cache.scores(generic, candidates, lambda cs: np.zeros(len(cs)))
    np.testing.assert_array_equal(cache.scores(avx2, same, lambda cs: np.ones(len(cs))), 1.0)
    np.testing.assert_array_equal(cache.scores(generic, candidates, lambda cs: np.ones(1)), 0.0)


def test_rows_keep_an_embedding_beside_the_score() -> None:
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.score_cache import ScoreCache

    context, candidates = _task(32)
    keys = [tm.trace_key(tm.trace_json(c.sch)) for c in candidates]
    # each program's row: its score and the position it was first drawn at
    first = {key: float(keys.index(key)) for key in keys}

    def compute(cs: list[Any]) -> np.ndarray:
        return np.array(
            [
                [s, first[tm.trace_key(tm.trace_json(c.sch))]]
                for c, s in zip(cs, _by_trace(cs), strict=True)
            ]
        )

    rows = ScoreCache().rows(context, candidates, compute)
    assert rows.shape == (len(candidates), 2)
    np.testing.assert_array_equal(rows[:, 0], _by_trace(candidates))
    np.testing.assert_array_equal(rows[:, 1], [first[key] for key in keys])


def test_the_base_model_scores_as_without_the_cache(checkpoint: Path) -> None:
    from tcl.integrations.tvm.adapter import CostModel
    from tcl.model.inputs import predict

    context, candidates = _task(32)
    net, vocab, tokenizer, _ = models.load(checkpoint)
    cost_model = CostModel(net, vocab, tokenizer)
    uncached = predict(net, cost_model._records(context, candidates))
    # float32 scores: a program scored in a batch of another make-up moves by an ulp or two
    np.testing.assert_allclose(cost_model.predict(context, candidates), uncached, rtol=1e-6)
    asked = cost_model.cache.misses
    np.testing.assert_allclose(cost_model.predict(context, candidates), uncached, rtol=1e-6)
    assert cost_model.cache.misses == asked  # the second time from the cache alone


def test_a_fine_tuned_model_forgets_its_scores(checkpoint: Path) -> None:
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm.adapter import CostModel
    from tcl.model.inputs import predict

    context, candidates = _task(32)
    net, vocab, tokenizer, _ = models.load(checkpoint)
    cost_model = CostModel(net, vocab, tokenizer, online_steps=2, lr=1e-2)
    before = cost_model.predict(context, candidates)
    results = [RunnerResult([1e-3 * (1 + i)], None) for i in range(8)]
    cost_model.update(context, candidates[:8], results)
    after = cost_model.predict(context, candidates)
    np.testing.assert_allclose(
        after, predict(cost_model.net, cost_model._records(context, candidates)), rtol=1e-6
    )
    assert not np.allclose(before, after)


class _Learner:
    """A learner whose score is a function of the program and of how often it has learnt."""

    def __init__(self) -> None:
        self.booster: object | None = object()
        self.updates, self.asked = 0, 0

    def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
        self.asked += len(candidates)
        return _by_trace(candidates) + self.updates

    def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
        self.updates += 1


class _Prior(_Learner):
    pass


def test_a_handoff_asks_its_learner_once_per_program_between_updates() -> None:
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    from tcl.integrations.tvm.blend import Blend

    context, candidates = _task(32)
    learner = _Learner()
    handoff = Blend(_Prior(), learner, handoff_at=1)
    handoff.update(context, candidates[:1], [RunnerResult([1e-3], None)])
    first = handoff.predict(context, candidates)
    np.testing.assert_array_equal(first, _by_trace(candidates) + 1)
    distinct = learner.asked
    assert distinct < len(candidates)
    np.testing.assert_array_equal(handoff.predict(context, candidates), first)
    assert learner.asked == distinct
    handoff.update(context, candidates[1:2], [RunnerResult([1e-3], None)])
    np.testing.assert_array_equal(handoff.predict(context, candidates), first + 1)
    assert learner.asked == 2 * distinct
