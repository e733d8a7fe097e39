"""``tcl collect --search``: measured programs drawn the way a tuner draws them.

Random programs (:mod:`tcl.tuning.collect`) cover each task's whole design space; a tuner's
candidates crowd near the good programs, where a model trained on random ones has seen little.
This collector runs MetaSchedule's evolutionary search on each task, guided by a cost model
(``tcl tune``'s default unless told; a checkpoint of tcl's own for a model's kind, so that a
model's next training set holds the programs its own search climbs to), starting from the
programs already measured for the task (the random collection's and its own), and keeps every
candidate it measures, all rounds, failures included, in the store ``OUT/<preset>-<id>/search``
(a MetaSchedule database, as the random store). Killed and run again, it goes on: each
measured batch is appended as it finishes, a task is searched until it holds
``programs_per_task`` search-drawn programs, and the search never measures a program its task
already holds. A task whose search finds no program the store lacks (a design space of a few
programs) is listed as ``exhausted`` in the store's manifest and not searched again. A
``PAUSE`` file in ``OUT`` or its parent holds it between tasks, as it holds the random
collector between batches.

With a convolution layout (``conv_layout``, :mod:`tcl.tuning.layout`) the networks'
convolutions are searched in it, as ``tcl tune --conv-layout`` tunes them, into their own store
``search-<layout>`` (``search-nchw16c``). Those are other workloads, which no random program
seeds; the tasks the layout leaves as they were are the ``search`` store's and are not searched
there.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tcl.records.store import RECORDS, RecordStore
from tcl.tuning.collect import (
    CollectSummary,
    MeasureProtocol,
    TaskPlan,
    _manifest,
    _wait_while_paused,
    measurement_workers,
    noise_figures,
    plan_tasks,
)
from tcl.tuning.options import DEFAULT_POPULATION, SEARCH_GUIDE
from tcl.tuning.platforms import Platform

SEARCH_DIR = "search"


def search_dir(conv_layout: str | None = None) -> str:
    """The store's folder in a platform's collection directory: ``search``, or
    ``search-nchw16c`` for the programs of convolutions in ``NCHW16c``."""
    return SEARCH_DIR if conv_layout is None else f"{SEARCH_DIR}-{conv_layout.lower()}"


def is_search_dir(name: str) -> bool:
    """Whether a folder named ``name`` is a search-drawn store (:func:`search_dir`'s name)."""
    return name == SEARCH_DIR or name.startswith(f"{SEARCH_DIR}-")


def collect_search(
    networks: Sequence[str],
    platform: Platform,
    out: str | Path,
    *,
    programs_per_task: int = 32,
    per_round: int = 8,
    cost_model: str = SEARCH_GUIDE,
    model_path: str | Path | None = None,
    population: int = DEFAULT_POPULATION,
    protocol: MeasureProtocol | None = None,
    max_tasks: int | None = None,
    tiny: bool = False,
    seed: int = 0,
    progress: bool = True,
    max_seconds: float | None = None,
    skip_networks: Sequence[str] = (),
    conv_layout: str | None = None,
) -> CollectSummary:
    """Searches every task of ``networks`` until ``OUT/search`` holds ``programs_per_task``
    measured programs of it, ``per_round`` a round; ``OUT`` is the platform's collection
    directory, whose random programs seed each task's search. A task that one of
    ``skip_networks`` also has is not searched: training data for a model that is scored on
    held-out networks could never use it (the training loads leave such a task out).
    ``model_path``: the tcl checkpoint of a ``tcl*`` ``cost_model`` (default: the packaged
    model); the store's manifest names it by content hash under ``drawn`` and ``guides``.
    ``conv_layout``: the networks' convolutions in that layout, into :func:`search_dir`'s store."""
    from tqdm import tqdm

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.baselines import make_cost_model
    from tcl.integrations.tvm.console import route_log
    from tcl.integrations.tvm.sync_runner import SyncRunner

    route_log(verbose=False)
    # A checkpoint that is missing, will not load, or is given to a kind that takes none fails
    # here, before the tasks are planned (minutes on the training networks) and anything stored.
    drawn = _drawn_by(cost_model, model_path, seed)
    checkpoint = None if model_path is None else str(model_path)
    protocol = protocol or MeasureProtocol.of(platform)
    platform.require_device(otherwise="search on a machine with the GPU")
    target = platform.tvm_target()
    make_cost_model(cost_model, checkpoint, device=tm.device_kind(target))
    start = time.time()
    deadline = None if max_seconds is None else start + max_seconds
    store = RecordStore(Path(out) / search_dir(conv_layout))
    plans = _tasks_to_search(networks, skip_networks, target, tiny, conv_layout)[:max_tasks]
    layout = {} if conv_layout is None else {"conv_layout": conv_layout}
    store.update_manifest(
        _manifest(networks, platform, protocol, plans, tiny) | layout | _guided_by(store, drawn)
    )
    # Tasks whose search found no program the store lacks (a design space of a few programs):
    # never searched again, as each such search costs seconds and finds nothing.
    exhausted: dict[str, int] = dict(store.manifest.get("exhausted", {}))
    plans = [p for p in plans if p.shash not in exhausted]
    todo = sum(max(0, programs_per_task - store.count(p.shash)) for p in plans)
    bar = tqdm(total=todo, unit="prog", disable=not progress, dynamic_ncols=True)
    builder, inner = measurement_workers(tm, protocol, platform.threads)
    runner = SyncRunner(inner)
    # Every program measured so far, by task, read once: where each task's search starts.
    seeds = _measured_by_task([Path(out), store.dir])
    measured = failed = 0
    try:
        for index, plan in enumerate(plans):
            left = programs_per_task - store.count(plan.shash)
            if left <= 0:
                continue
            _wait_while_paused(Path(out), bar)  # a PAUSE file holds the collector between tasks
            bar.set_postfix_str(f"task {index + 1}/{len(plans)} {plan.name[:28]}")
            guide = make_cost_model(cost_model, checkpoint, device=tm.device_kind(target))
            done, bad = _search_task(
                plan, left, store, seeds.get(plan.shash, []), target, builder, runner,
                guide, population, per_round, seed + index, bar,
            )  # fmt: skip
            measured, failed = measured + done, failed + bad
            if done == bad == 0:
                exhausted[plan.shash] = store.count(plan.shash)
                store.update_manifest({"exhausted": exhausted})
            if deadline is not None and time.time() > deadline:
                break
    finally:
        bar.close()
        tm.shutdown(builder, inner)
    return CollectSummary(
        measured,
        failed,
        time.time() - start,
        store.records,
        len(store.workload_index),
        *noise_figures(store),
    )


def _tasks_to_search(
    networks: Sequence[str],
    skip_networks: Sequence[str],
    target: Any,
    tiny: bool,
    conv_layout: str | None,
) -> list[TaskPlan]:
    """The tasks of ``networks`` that none of ``skip_networks`` has, both in ``conv_layout``;
    with a layout, only the tasks it changes (the rest are the ``search`` store's)."""
    plans = plan_tasks(networks, target, tiny=tiny, conv_layout=conv_layout)
    skipped = set()
    if skip_networks:
        skipped = {
            p.shash for p in plan_tasks(skip_networks, target, tiny=tiny, conv_layout=conv_layout)
        }
    if conv_layout is not None:
        skipped |= {p.shash for p in plan_tasks(networks, target, tiny=tiny)}
    return [p for p in plans if p.shash not in skipped]


def _guided_by(store: RecordStore, drawn: dict[str, Any]) -> dict[str, Any]:
    """The manifest's ``drawn`` (this run's guide) and ``guides``: every guide the store's
    programs came from (a store drawn before they were listed: its last guide, ``drawn``)."""
    guides = list(store.manifest.get("guides", []))
    if not guides and "drawn" in store.manifest:
        guides.append(store.manifest["drawn"])
    if drawn not in guides:
        guides.append(drawn)
    return {"drawn": drawn, "guides": guides}


def _search_task(
    plan: TaskPlan,
    trials: int,
    store: RecordStore,
    seeds: list[Any],
    target: Any,
    builder: Any,
    runner: Any,
    cost_model: Any,
    population: int,
    per_round: int,
    seed: int,
    bar: Any,
) -> tuple[int, int]:
    """One task's search for ``trials`` new programs, guided by ``cost_model`` (a
    MetaSchedule cost model, fresh for the task); returns (measured, failed)."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir
    from tvm.s_tir.schedule import ScheduleError

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.callbacks import store_every_candidate
    from tcl.integrations.tvm.console import route_log
    from tcl.integrations.tvm.search import NewProgramsOnly

    # MetaSchedule makes a task's loggers anew on every tuning call: clear the last task's.
    route_log(verbose=False)
    database = ms.database.MemoryDatabase()
    workload = database.commit_workload(plan.mod)
    for record in seeds:  # where the search starts: every program measured for the task
        try:
            seed_record = ms.database.TuningRecord.from_json(record, workload)
        except ScheduleError:
            # Tasks are merged by structural hash: a program stored for the same task of
            # another network can name blocks this module calls otherwise. It cannot seed
            # this search, and the search may still measure it under this module's names.
            continue
        database.commit_tuning_record(seed_record)
    index = store.workload(tm.workload_json(plan.mod))
    kept = {"measured": 0, "failed": 0}
    keeper = store_every_candidate(store, plan.shash, index, target, bar, kept)
    with tempfile.TemporaryDirectory(prefix="tcl-search-") as work:
        context = ms.TuneContext(
            mod=plan.mod,
            target=target,
            space_generator="post-order-apply",
            search_strategy=NewProgramsOnly(
                ms.search_strategy.EvolutionarySearch(population_size=population)
            ),
            task_name=plan.name,
            logger=get_loggers_from_work_dir(work, [plan.name])[0],
            rand_state=seed,
            num_threads=tm.search_threads(target),
        ).clone()
        ms.tune_tasks(
            tasks=[context],
            task_weights=[1.0],
            work_dir=work,
            max_trials_global=trials,
            num_trials_per_iter=min(per_round, trials),
            builder=builder,
            runner=runner,
            database=database,
            cost_model=cost_model,
            measure_callbacks=[*ms.measure_callback.MeasureCallback.create("default"), keeper],
        )
    return kept["measured"], kept["failed"]


def _drawn_by(cost_model: str, model_path: str | Path | None, seed: int) -> dict[str, Any]:
    """How a search store's programs were drawn, for its manifest: the guiding model's kind,
    and the checkpoint by name and content hash (None: the packaged model of its kind)."""
    model = None
    if model_path is not None:
        if not cost_model.startswith("tcl"):
            raise ValueError(f"a model checkpoint guides tcl's cost models, not {cost_model!r}")
        digest = hashlib.sha256(Path(model_path).read_bytes()).hexdigest()
        model = {"file": Path(model_path).name, "sha256": digest}
    return {"by": "evolutionary search", "cost_model": cost_model, "model": model, "seed": seed}


def _measured_by_task(directories: list[Path]) -> dict[str, list[Any]]:
    """The measured records of each MetaSchedule database in ``directories`` (a store's records
    and workload files), by task (structural hash): MetaSchedule's record JSON without its
    workload index. Failures and unmeasured candidates are left out."""
    by_task: dict[str, list[Any]] = {}
    for directory in directories:
        workloads = directory / "database_workload.json"
        if not (directory / RECORDS).exists() or not workloads.exists():
            continue
        shashes = [json.loads(line)[0] for line in workloads.read_text().splitlines()]
        for line in (directory / RECORDS).read_text().splitlines():
            index, record = json.loads(line)
            run_secs = record[1]
            if run_secs and max(run_secs) < 1e9:
                by_task.setdefault(shashes[index], []).append(record)
    return by_task
