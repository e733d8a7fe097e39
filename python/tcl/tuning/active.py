"""``tcl active``: measure only what teaches the cost model most, in rounds.

pool (unmeasured random programs per task) → round 1: the most diverse ones (token features)
→ measure → train → round k: RDU in the model's embedding space with its MC-dropout uncertainty
→ measure → ... until ``budget`` of each task's pool is measured; then a final model.

With a ``base`` model (e.g. the packaged one, trained on other platforms), round 1 already
works in the base's embedding space with its uncertainty, and every round fine-tunes the base
on what is measured: the setting bench/bench_data_efficiency.py measures by default. Every
stage is resumable: the pool and the measured store are append-only and keyed by trace, and a
rerun recomputes the next selection from what is stored.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tcl.records import RecordSet, read_records
from tcl.records.store import RecordStore
from tcl.tuning.collect import MeasureProtocol, collect, measure_and_store, measurement_workers
from tcl.tuning.platforms import Platform


@dataclass
class ActiveSummary:
    pool: int
    measured: int
    rounds: int
    model: str

    def lines(self) -> list[str]:
        return [
            f"measured {self.measured:,} of {self.pool:,} pooled programs in {self.rounds} "
            f"round(s); model: {self.model}"
        ]


def _trace_keys(rs: RecordSet) -> list[str]:
    """The trace key (as the store keys programs) of every row, read back from its file line."""
    from tcl.integrations.tvm.baselines import Replayer

    replayer = Replayer()
    return [
        json.dumps(replayer.line(rs, row)[1][0], separators=(",", ":")) for row in range(len(rs))
    ]


def _measure_rows(
    pool: RecordSet,
    rows: np.ndarray,
    keys: list[str],
    store: RecordStore,
    target: Any,
    workers: tuple[Any, Any],
    protocol: MeasureProtocol,
) -> None:
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.baselines import Replayer

    replayer = Replayer()
    target_json = tm.to_py(target.export())
    by_task: dict[int, list[int]] = defaultdict(list)
    for row in rows:
        by_task[int(pool.columns["task"][row])].append(int(row))
    for task_rows in by_task.values():
        records = [replayer.record(pool, r) for r in task_rows]
        workload = store.workload(tm.workload_json(records[0].workload.mod))
        batch = [
            (keys[r], rec.as_measure_candidate(), json.loads(keys[r]))
            for r, rec in zip(task_rows, records, strict=True)
        ]
        for start in range(0, len(batch), protocol.batch):
            measure_and_store(
                tm,
                *workers,
                store,
                workload,
                batch[start : start + protocol.batch],
                target,
                target_json,
                protocol,
            )


def _start_model(base: str | Path | None) -> tuple[Any, Any, Any]:
    """(model, vocabulary, tokenizer) of the base checkpoint; all None without a base. (A model
    that reads the platform reads it from each pooled record's target.)"""
    from tcl import model as models

    if base is None:
        return None, None, None
    net, vocab, tokenizer, _ = models.load(base)
    return net, vocab, tokenizer


def _stored(store: RecordStore, pool: RecordSet, keys: list[str]) -> np.ndarray:
    """Whether each pooled program (by its task and trace key) is measured in ``store``."""
    shash = pool.tasks.workload_key
    return np.array(
        [store.has(shash[int(t)], k) for t, k in zip(pool.columns["task"], keys, strict=True)]
    )


def _pick(net: Any, pool: Any, fraction: float, measured: np.ndarray) -> np.ndarray:
    """RDU's pick of each task's pool: in the model's embedding space with its MC-dropout
    uncertainty, or on token features before any model exists."""
    from tcl.sampling import sampler

    if net is None:
        points, uncertainty = sampler.token_features(pool), None
    else:
        points = sampler.model_embeddings(net, pool)
        uncertainty = sampler.model_uncertainty(net, pool)
    return sampler.select_per_task(
        points, pool.columns["task"], fraction, uncertainty=uncertainty, measured=measured
    )


def _fit(out: Path, pool: Any, steps: int, start: Any) -> Any:
    """A model trained on everything measured in ``out`` so far (from ``start`` when given)."""
    from tcl import model as models
    from tcl.records.dataset import load_dataset
    from tcl.training.train import TrainConfig, train

    data = load_dataset(out, vocab=pool.vocab.freeze(), tokenizer=pool.tokenizer)
    config = models.ModelConfig(vocab_size=len(pool.vocab))
    net, _ = train(
        data, None, config, TrainConfig(max_steps=steps), init=start, log=lambda *a: None
    )
    return net


def active(
    networks: Sequence[str],
    platform: Platform,
    out: str | Path,
    *,
    budget: float = 0.1,
    rounds: int = 3,
    pool_size: int = 500,
    train_steps: int = 600,
    max_tasks: int | None = None,
    tiny: bool = False,
    protocol: MeasureProtocol | None = None,
    base: str | Path | None = None,
    progress: bool = True,
) -> ActiveSummary:
    from tqdm import tqdm

    from tcl import model as models
    from tcl.integrations.tvm import measure as tm

    protocol = protocol or MeasureProtocol.of(platform)
    out = Path(out)
    collect(
        networks,
        platform,
        out,
        programs_per_task=pool_size,
        pool_only=True,
        max_tasks=max_tasks,
        tiny=tiny,
        progress=False,
    )
    start_net, vocab, tokenizer = _start_model(base)
    pool = read_records(out / "pool", vocab=vocab, tokenizer=tokenizer)
    keys = _trace_keys(pool)
    store = RecordStore(out)
    target = platform.tvm_target()
    builder, runner = measurement_workers(tm, protocol, platform.threads)
    net = start_net
    # The last round brings every task to `budget` of its pool; rounds before it, to a share.
    goal = int(sum(np.ceil(budget * n) for n in np.bincount(pool.columns["task"])))
    bar = tqdm(total=goal, unit="prog", disable=not progress, dynamic_ncols=True)
    try:
        for r in range(rounds):
            measured = _stored(store, pool, keys)
            rows = _pick(net, pool, budget * (r + 1) / rounds, measured)
            bar.set_postfix_str(f"round {r + 1}/{rounds}: measuring {len(rows)}")
            _measure_rows(pool, rows, keys, store, target, (builder, runner), protocol)
            bar.update(len(rows))
            bar.set_postfix_str(f"round {r + 1}/{rounds}: training")
            net = _fit(out, pool, train_steps, start_net)
    finally:
        bar.close()
        tm.shutdown(builder, runner)
    path = out / "model.pt"
    if net is not None and net is not start_net:
        extra = {"budget": budget, "rounds": rounds, "base": None if base is None else str(base)}
        models.save(path, net, pool.vocab, pool.tokenizer, extra)
    return ActiveSummary(len(pool), store.records, rounds, str(path))
