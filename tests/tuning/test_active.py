"""tcl active on a tiny network: pool, rounds of selection and measurement, budget, resume."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

import tcl
from tcl.tuning import platforms

pytestmark = pytest.mark.tvm


def test_active_rounds_spend_the_budget_once(tmp_path: Path) -> None:
    from tcl.tuning.active import active

    platform = platforms.get("cpu-x86-64-1t")
    summary = active(
        ["bert_tiny"],
        platform,
        tmp_path,
        budget=0.5,
        rounds=2,
        pool_size=6,
        train_steps=10,
        max_tasks=3,
        tiny=True,
    )
    pool = tcl.read_records(tmp_path / "pool")
    measured = tcl.read_records(tmp_path)
    pool_per_task = Counter(pool.tasks.workload_key[t] for t in pool.columns["task"])
    measured_per_task = Counter(measured.tasks.workload_key[t] for t in measured.columns["task"])
    assert measured_per_task == {k: math.ceil(0.5 * n) for k, n in pool_per_task.items()}
    assert summary.measured == len(measured) and Path(summary.model).exists()
    # Run again: everything within budget is measured already, nothing new is measured.
    again = active(
        ["bert_tiny"],
        platform,
        tmp_path,
        budget=0.5,
        rounds=2,
        pool_size=6,
        train_steps=10,
        max_tasks=3,
        tiny=True,
    )
    assert again.measured == summary.measured


def test_active_from_the_base_model(tmp_path: Path) -> None:
    """With a base model, round 1 uses its space and the result is the base fine-tuned: the
    same vocabulary and size as the base."""
    from tcl import model as models
    from tcl.tuning.active import active

    summary = active(
        ["bert_tiny"],
        platforms.get("cpu-x86-64-1t"),
        tmp_path,
        budget=0.5,
        rounds=1,
        pool_size=4,
        train_steps=5,
        max_tasks=2,
        tiny=True,
        base=models.base_model_path(),
    )
    net, vocab, _, extra = models.load(summary.model)
    base_net, base_vocab, _, _ = models.load(models.base_model_path())
    assert vocab.kinds == base_vocab.kinds and extra["base"] == str(models.base_model_path())
    assert models.num_parameters(net) == models.num_parameters(base_net)
    assert 0 < summary.measured <= summary.pool
