"""``tcl collect``: measured programs for a platform, from the tasks of zoo networks.

For each task (deduplicated across networks by structural hash) it draws random programs from
the MetaSchedule design space, skips those already stored, builds a batch in parallel, runs the
batch one program at a time, and appends every result — failures included — to the platform's
:class:`~tcl.records.store.RecordStore`. Killed at any point and run again, it continues where it
stopped: the store is append-only and knows every program it holds.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tcl._format import counted
from tcl.records.store import RecordStore
from tcl.training.metrics import ranks
from tcl.tuning.platforms import Platform

# Build workers at most: each holds TVM (about 240 MB of its own).
MOST_BUILD_WORKERS = 16


@dataclass(frozen=True)
class MeasureProtocol:
    """How a program is measured (recorded in the manifest).

    ``number=1, repeat=3, min_repeat_ms=20``: each of the 3 stored repeats runs the kernel for at
    least 20 ms, which steadies sub-millisecond kernels (two passes agreed with
    Spearman 0.93 on random matmuls); no cache flush (warm-cache numbers, as TenSet's CPU data).
    Builds use a persistent worker on each core the process may use, at least 2 (:meth:`of`);
    runs are one at a time after their batch is built.
    """

    number: int = 1
    repeat: int = 3
    min_repeat_ms: int = 20
    cpu_cache_flush: bool = False
    build_timeout_s: float = 60.0
    run_timeout_s: float = 30.0
    batch: int = 16
    build_workers: int = 2
    remeasure_per_batch: int = 2

    @classmethod
    def of(cls, platform: Platform, **changes: Any) -> MeasureProtocol:
        """The protocol for ``platform`` (with ``changes``): candidates are built by a worker on
        each core this process may use (:func:`tcl.tuning.platforms.usable_cores`), at least 2
        and at most :data:`MOST_BUILD_WORKERS`, since builds never share the machine with a run
        (NVRTC takes seconds a program that a GPU runs in milliseconds). On one core, one
        worker compiled random programs 1.07x faster than two in turn, but a quick round ended
        no sooner (``bench_builds.py``, bench/README.md), so it keeps two."""
        from tcl.tuning.platforms import usable_cores

        cores = min(len(usable_cores()), MOST_BUILD_WORKERS)
        changes.setdefault("build_workers", max(2, cores))
        return cls(**changes)


@dataclass
class TaskPlan:
    name: str
    shash: str
    flops: float
    mod: Any
    networks: dict[str, int]


def plan_tasks(
    networks: Sequence[str],
    target: Any,
    *,
    batch: int = 1,
    tiny: bool = False,
    conv_layout: str | None = None,
) -> list[TaskPlan]:
    """The tasks of ``networks`` (their convolutions in ``conv_layout``, None: as imported),
    merged across networks by structural hash (weights kept per network), in first-seen
    order."""
    from tcl import zoo
    from tcl.integrations.tvm.measure import workload_json

    plans: dict[str, TaskPlan] = {}
    for network in networks:
        for task in zoo.extract(network, target, batch=batch, tiny=tiny, conv_layout=conv_layout):
            shash = workload_json(task.mod)[0]
            plan = plans.setdefault(shash, TaskPlan(task.name, shash, task.flops, task.mod, {}))
            plan.networks[network] = plan.networks.get(network, 0) + task.weight
    return list(plans.values())


@dataclass
class CollectSummary:
    measured: int
    failed: int
    seconds: float
    records_total: int
    tasks: int
    median_cv: float
    spearman: float
    noise_pairs: int

    def lines(self) -> list[str]:
        rate = self.measured / self.seconds if self.seconds > 0 else 0.0
        # a rank correlation needs three re-measured programs of one task
        spearman = f"{self.spearman:.3f}" if np.isfinite(self.spearman) else "not yet (< 3 a task)"
        return [
            f"measured {counted(self.measured, 'program')} ({self.failed:,} failed) in "
            f"{self.seconds:.0f} s ({rate:.2f}/s); the store holds "
            f"{counted(self.records_total, 'record')} of {counted(self.tasks, 'task')}",
            f"noise: median CV of repeats {self.median_cv:.4f}; Spearman between two measurements "
            f"{spearman} over {counted(self.noise_pairs, 're-measured program')}",
        ]


def noise_figures(store: RecordStore) -> tuple[float, float, int]:
    """Median coefficient of variation of the stored repeats, and the Spearman rank correlation
    between first and second measurements of re-measured programs (pooled within tasks)."""
    import json

    cvs = []
    records = store.dir / "database_tuning_record.json"
    if records.exists():
        for line in records.read_text().splitlines():
            run_secs = json.loads(line)[1][1]
            secs = np.asarray(run_secs or [], dtype=float)  # null: an unmeasured pool entry
            if len(secs) > 1 and secs.max() < 1e9 and secs.mean() > 0:
                cvs.append(secs.std() / secs.mean())
    pairs: dict[int, list[tuple[float, float]]] = {}
    for entry in store.noise():
        pairs.setdefault(entry["workload"], []).append(
            (float(np.median(entry["first"])), float(np.median(entry["second"])))
        )
    rhos, weights = [], []
    for values in pairs.values():
        if len(values) >= 3:
            a, b = np.asarray(values).T
            rho = float(np.corrcoef(ranks(a), ranks(b))[0, 1])
            if np.isfinite(rho):
                rhos.append(rho)
                weights.append(len(values))
    n = sum(len(v) for v in pairs.values())
    spearman = float(np.average(rhos, weights=weights)) if rhos else float("nan")
    return (float(np.median(cvs)) if cvs else float("nan")), spearman, n


def _fresh_candidates(
    tm: Any, store: RecordStore, plan: TaskPlan, target: Any, need: int, seed: int
) -> list[tuple[str, Any, list[Any]]]:
    """Up to ``need`` random programs of ``plan`` that the store does not hold yet."""
    fresh: dict[str, tuple[str, Any, list[Any]]] = {}
    for c in tm.random_candidates(plan.mod, target, 2 * need, seed):
        trace = tm.trace_json(c.sch)
        key = tm.trace_key(trace)
        if not store.has(plan.shash, key) and key not in fresh and len(fresh) < need:
            fresh[key] = (key, c, trace)
    return list(fresh.values())


PAUSE_FILE = "PAUSE"


def _wait_while_paused(directory: Path, bar: Any) -> None:
    """Holds between batches while a PAUSE file exists in the store or its parent directory,
    so that benchmarks can have the machine without corrupting a measurement in flight."""
    while (directory / PAUSE_FILE).exists() or (directory.parent / PAUSE_FILE).exists():
        bar.set_postfix_str("paused (remove the PAUSE file to go on)")
        time.sleep(2)


def measure_and_store(
    tm: Any,
    builder: Any,
    runner: Any,
    store: RecordStore,
    workload: int,
    batch: list[tuple[str, Any, list[Any]]],
    target: Any,
    target_json: dict[str, Any],
    protocol: MeasureProtocol,
) -> int:
    """Measures one batch and stores every result; returns how many failed."""
    candidates = [c for _, c, _ in batch]
    results, again = tm.measure(
        builder, runner, candidates, target, remeasure=protocol.remeasure_per_batch
    )
    for i, ((key, c, trace), m) in enumerate(zip(batch, results, strict=True)):
        args = [tm.to_py(a.as_json()) for a in c.args_info]
        store.add(workload, trace, key, m.run_secs, target_json, args, m.error, m.message)
        if i in again and m.run_secs:
            store.add_noise(workload, key, m.run_secs, again[i])
    return sum(m.run_secs is None for m in results)


def measurement_workers(
    tm: Any,
    protocol: MeasureProtocol,
    threads: int,
    rpc: tuple[str, int, str] | None = None,
    opt_level: int | None = None,
) -> tuple[Any, Any]:
    """A persistent build pool, its workers starting, and a runner measuring as ``protocol``
    says (through the RPC tracker ``rpc`` when given); shut them down with ``tm.shutdown``.
    ``opt_level``: LLVM's level of a CPU's builds (None: the target's)."""
    evaluator = tm.EvaluatorConfig(
        number=protocol.number,
        repeat=protocol.repeat,
        min_repeat_ms=protocol.min_repeat_ms,
        enable_cpu_cache_flush=protocol.cpu_cache_flush,
    )
    runner = tm.make_runner(evaluator, protocol.run_timeout_s, rpc=rpc, threads=threads)
    # a local runner opens the candidates as the builders link them; an RPC device links its own
    builder = tm.PersistentLocalBuilder(
        protocol.build_workers, protocol.build_timeout_s, opt_level=opt_level, link=rpc is None
    )
    # The build workers start once the runner's is up (making the runner waits for it): with
    # all three importing TVM at once, a quickstart on two cores made its tasks 3x slower.
    builder.start()
    return builder, runner


def start_measurement_workers(
    tm: Any,
    protocol: MeasureProtocol,
    threads: int,
    rpc: tuple[str, int, str] | None = None,
    opt_level: int | None = None,
) -> Future[tuple[Any, Any]]:
    """:func:`measurement_workers`, made in a thread of their own: their processes import TVM
    (6.4 s for all three on one core of a Zen 3) while this one goes on (the tuner makes the
    network's tasks meanwhile)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tcl-workers")
    future = pool.submit(measurement_workers, tm, protocol, threads, rpc, opt_level)
    pool.shutdown(wait=False)  # its thread ends with the job; the caller waits on the future
    return future


@dataclass
class _Run:
    """One collection: the store, the measurement workers and the counts so far."""

    tm: Any
    store: RecordStore
    target: Any
    protocol: MeasureProtocol
    programs_per_task: int
    seed: int
    bar: Any
    pool_only: bool
    builder: Any = None
    runner: Any = None
    measured: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        self.target_json = self.tm.to_py(self.target.export())

    def fill(self, plan: TaskPlan, label: str, deadline: float | None) -> bool:
        """Measures (or pools) programs of ``plan`` until it holds ``programs_per_task``;
        False when the deadline passed."""
        tm, store, target_json = self.tm, self.store, self.target_json
        workload = store.workload(tm.workload_json(plan.mod))
        dry_draws = 0  # a space smaller than programs_per_task runs dry: give up after a few
        while store.count(plan.shash) < self.programs_per_task and dry_draws < 8:
            _wait_while_paused(store.dir, self.bar)
            need = min(self.protocol.batch, self.programs_per_task - store.count(plan.shash))
            draw = zlib.crc32(plan.shash.encode()) + 7919 * (store.count(plan.shash) + dry_draws)
            batch = _fresh_candidates(
                tm, store, plan, self.target, need, (draw + self.seed) % 2**31
            )
            if not batch:
                dry_draws += 1
                continue
            if self.pool_only:
                for key, c, trace in batch:
                    args = [tm.to_py(a.as_json()) for a in c.args_info]
                    store.add_unmeasured(workload, trace, key, target_json, args)
            else:
                self.failed += measure_and_store(
                    tm, self.builder, self.runner, store, workload, batch, self.target,
                    target_json, self.protocol,
                )  # fmt: skip
            self.measured += len(batch)
            self.bar.update(len(batch))
            self.bar.set_postfix_str(f"{label} {plan.name[:28]} failed {self.failed}")
            if deadline is not None and time.time() > deadline:
                return False
        return True


_NO_GPU = "measure through --rpc-tracker, or write an unmeasured pool (--pool-only)"


def _manifest(
    networks: Sequence[str],
    platform: Platform,
    protocol: MeasureProtocol | None,
    plans: list[TaskPlan],
    tiny: bool,
) -> dict[str, Any]:
    """What a store's manifest says of a run: versions, platform, protocol (None: an unmeasured
    pool), each task's name, FLOPs and networks."""
    from tcl import __version__

    return {
        "tcl_version": __version__,
        "platform": platform.to_dict(),
        "protocol": None if protocol is None else asdict(protocol),
        "tasks": {
            p.shash: {"name": p.name, "flops": p.flops, "networks": p.networks} for p in plans
        },
        "networks": {n: {"tiny": tiny} for n in networks},
    }


def collect(
    networks: Sequence[str],
    platform: Platform,
    out: str | Path,
    *,
    programs_per_task: int = 48,
    protocol: MeasureProtocol | None = None,
    rpc: tuple[str, int, str] | None = None,
    pool_only: bool = False,
    max_tasks: int | None = None,
    tiny: bool = False,
    seed: int = 0,
    progress: bool = True,
    max_seconds: float | None = None,
) -> CollectSummary:
    """Measures ``programs_per_task`` distinct programs of every task of ``networks`` into the
    store at ``out`` (or, with ``pool_only``, stores them unmeasured in ``out/pool``)."""
    from tqdm import tqdm

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.console import route_log

    route_log(verbose=False)  # no handler of an earlier run in this process gets our lines
    protocol = protocol or MeasureProtocol.of(platform)
    start = time.time()
    target = platform.tvm_target()
    if not pool_only:
        platform.require_device(rpc, _NO_GPU)
    store = RecordStore(Path(out) / "pool" if pool_only else Path(out))
    plans = plan_tasks(networks, target, tiny=tiny)[:max_tasks]
    store.update_manifest(
        _manifest(networks, platform, None if pool_only else protocol, plans, tiny)
    )
    todo = sum(max(0, programs_per_task - store.count(p.shash)) for p in plans)
    bar = tqdm(total=todo, unit="prog", disable=not progress, dynamic_ncols=True)
    run = _Run(tm, store, target, protocol, programs_per_task, seed, bar, pool_only)
    deadline = None if max_seconds is None else start + max_seconds
    try:
        if not pool_only:
            run.builder, run.runner = measurement_workers(tm, protocol, platform.threads, rpc)
        for task_index, plan in enumerate(plans):
            if not run.fill(plan, f"task {task_index + 1}/{len(plans)}", deadline):
                break
    finally:
        bar.close()
        tm.shutdown(run.builder, run.runner)
    median_cv, spearman, pairs = noise_figures(store)
    return CollectSummary(
        run.measured,
        run.failed,
        time.time() - start,
        store.records,
        len(store.workload_index),
        median_cv,
        spearman,
        pairs,
    )
