"""``tcl tune``: tune a model with MetaSchedule, guided by a chosen cost model, then build it,
write the deployable library and compare its latency with the untuned build and with PyTorch.

The flow is stock apache-tvm (``tune_tasks`` → ``compile_relax``) with this machine's fixes:
persistent build workers, synchronous measurement, ``mcpu`` always set, zero-FLOP tasks left
out, and a per-task batch small enough that every task gets trials.
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcl.integrations.tvm.console import native_stderr_to
from tcl.integrations.tvm.patches import enters_tvm
from tcl.tuning.fast_math import fast_math
from tcl.tuning.latency import time_result
from tcl.tuning.options import (
    COST_MODELS,
    DEFAULT_COST_MODELS,
    DEFAULT_POPULATION,
    DEFAULT_TRIALS,
    DEFAULT_WORK_DIR,
    TuneOptions,
)
from tcl.tuning.platforms import Platform
from tcl.tuning.report import TuneReport, estimate_curve, plot_curves, write_report
from tcl.tuning.user_models import UserModel

if TYPE_CHECKING:
    from tcl.integrations.tvm.search import Deadline
    from tcl.tuning.allot import Allotment
    from tcl.tuning.collect import MeasureProtocol


def tune(
    model: Any,
    example_inputs: Any = (),
    *,
    platform: str | Platform | None = None,
    trials: int | None = None,
    work_dir: str | Path = DEFAULT_WORK_DIR,
    name: str | None = None,
    **options: Any,
) -> TuneReport:
    """Tunes what a Python caller has: a ``torch.nn.Module`` with its example inputs, a
    ``torch.export.ExportedProgram``, or a spec string as ``tcl tune MODEL`` takes, on
    ``platform`` (a preset name or a :class:`Platform`; default: this CPU), writing
    ``WORK_DIR/<name>.so``. ``trials``: :data:`DEFAULT_TRIALS`, or :data:`TIMED_TRIALS` as a
    bound under a time budget (``minutes``), which also makes each task's first round a quick
    one of :data:`~tcl.tuning.options.TIMED_FIRST_ROUND` unless ``first_round`` is given;
    ``options``: the fields of :class:`TuneOptions`.

    >>> report = tcl.tune(net, (x,), trials=64, work_dir="net-tune")
    >>> report.library, report.latency_ms, report.torch_ms
    """
    from tcl.tuning import platforms
    from tcl.tuning.user_models import as_user_model

    if not isinstance(platform, Platform):
        platform = platforms.get(platform or platforms.DEFAULT_PLATFORM)
    user = as_user_model(model, example_inputs, name)
    return tune_model(user, platform, work_dir, TuneOptions.of(trials, **options))


def tune_network(
    network: str,
    platform: Platform,
    trials: int,
    work_dir: str | Path,
    *,
    tiny: bool = False,
    **options: Any,
) -> TuneReport:
    """:func:`tune_model` on a zoo network (``tiny``: its small test input); ``options``: the
    fields of :class:`TuneOptions`, exactly as given (its defaults, not :meth:`TuneOptions.of`'s:
    no quick first round under a time budget unless ``first_round`` asks; the benchmarks name
    every variant this way)."""
    from tcl.tuning.user_models import load_model

    user = load_model(network, tiny=tiny)
    return tune_model(user, platform, work_dir, TuneOptions(trials=trials, **options))


@enters_tvm
def tune_model(
    model: UserModel, platform: Platform, work_dir: str | Path, options: TuneOptions
) -> TuneReport:
    """Tunes ``model`` (:mod:`user_models`) as ``options`` say, measures the result and writes
    the deployable library ``WORK_DIR/<name>.so`` with a README.txt saying how to run it. A work
    directory tuned before is resumed: its database stays, the search starts from its best
    programs, and ``options.trials`` more programs, none of them in the database, are measured.
    With ``options.rpc`` the tuner measures candidates on the device behind the tracker, and
    the tuned and untuned libraries are uploaded and timed there (PyTorch eager runs here). The
    builds are timed in ``options.rounds`` fresh processes (:mod:`tcl.tuning.isolated`; on an
    RPC device, interleaved rounds), PyTorch eager beside them. MetaSchedule's log and what
    TVM's C++ code prints go to WORK_DIR/logs, and also to the terminal when
    ``options.verbose``."""
    from tcl.records.store import WriterLock

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    _lock = WriterLock(work, "a tuning work directory")  # held until this call returns
    native_log = None if options.verbose else work / "logs" / "tvm_native.log"
    with native_stderr_to(native_log):
        return _tune_locked(model, platform, work, options)


def _tune_locked(
    model: UserModel, platform: Platform, work: Path, options: TuneOptions
) -> TuneReport:
    """:func:`tune_model` once the work directory is held."""
    from tcl.integrations.tvm.measure import device_kind
    from tcl.tuning.compile import compile_tuned
    from tcl.tuning.untuned import tuned_tasks, tuned_where_faster, untuned_seconds

    platform.require_device(options.rpc)
    target = platform.tvm_target()
    device = device_kind(target)
    options = options.on_device(device)  # the report names the model that ran
    search = Search(options)
    workers = search.start_workers(platform)  # their processes start while the tasks are made
    try:
        mod, extracted = network_tasks(model, target, options)
        earlier = _trials_in(work)  # a work directory tuned before is resumed: its trials stay
        begin, untuned, untuned_at, dlight_tasks = time.time(), {}, 0.0, 0
        if device == "cuda":  # each task's dlight kernel, before the search
            untuned = untuned_seconds(extracted, target, *workers.result(), work)
            untuned_at = time.time() - begin
    except BaseException:
        search.stop_workers(workers)
        raise
    database, batches, start, tune_seconds = search.run(extracted, work, platform, workers=workers)
    if untuned:  # the tuning began with them; tasks whose tuned programs are slower than
        start, tune_seconds = begin, tune_seconds + start - begin  # dlight's are left to it
        database = tuned_where_faster(database, untuned)
        dlight_tasks = len(extracted) - tuned_tasks(database)
    built = compile_tuned(database, mod, target, weight_prepack=options.weight_prepack)
    library = write_library(built, work, model, options.cc, device)
    timings, load, error, where = time_result(
        built, library, mod, target, model, platform, options.rounds, options.rpc, options.cc
    )
    return TuneReport(
        network=model.name,
        platform=platform.name,
        tasks=len(extracted),
        tune_seconds=tune_seconds,
        latency_ms=timings["tuned"].median,
        untuned_ms=timings["untuned"].median,
        torch_ms=timings["torch"].median if "torch" in timings else None,
        max_abs_error=error,
        curve=estimate_curve(
            work, task_weights(extracted), batches, start, earlier, untuned, untuned_at
        ),
        samples_ms={label: t.samples_ms for label, t in timings.items()},
        threads=platform.threads,
        machine_load=asdict(load),
        library=str(library),
        builds_timed_on=where,
        options=options.saved(),
        measured=_trials_in(work) - earlier,
        dlight_tasks=dlight_tasks,
    )


def network_tasks(model: UserModel, target: Any, options: TuneOptions) -> tuple[Any, list[Any]]:
    """The network as it is tuned and built (its Relax module, with TVM's fast math unless
    ``exact_math``) and its tasks for ``target``."""
    from tcl.zoo.extract import export_program, extracted_tasks, import_program

    mod = model.relax
    if mod is None:
        mod = import_program(model.program or export_program(model.module, model.inputs))
    if not options.exact_math:
        mod = fast_math(mod)
    return mod, extracted_tasks(mod, target, weight_prepack=options.weight_prepack)


def task_weights(extracted: list[Any]) -> dict[str, float]:
    """How often each extracted task runs in the network, by its workload's structural hash."""
    from tcl.integrations.tvm.measure import workload_key

    return {workload_key(t.dispatched[0]): float(t.weight) for t in extracted}


def _trials_in(work: Path) -> int:
    """Trials measured in ``work`` by earlier runs (MetaSchedule's database there)."""
    from tcl.records import read_records

    if not any(work.glob("*tuning_record*.json")):
        return 0
    return len(read_records(work))


def write_library(
    built: Any, work: Path, model: UserModel, cc: str | None = None, device: str = "cpu"
) -> Path:
    """``WORK_DIR/<name>.so`` (the relax VM executable, linked by ``cc``: default, the system's
    c++) and a README.txt on running it on ``device`` ("cpu" or "cuda")."""
    library = work / f"{model.name}.so"
    built.export_library(str(library), cc=cc)
    shapes = ", ".join(
        f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" for x in model.inputs
    )
    (work / "README.txt").write_text(
        f"{library.name}: {model.name} tuned by tcl; inputs {shapes}.\n"
        "Run it with stock TVM (apache-tvm) and numpy:\n\n"
        "    import numpy as np, tvm\n"
        "    from tvm import relax\n"
        f"    dev = tvm.{'cuda(0)' if device == 'cuda' else 'cpu()'}\n"
        f"    vm = relax.VirtualMachine(tvm.runtime.load_module('{library.name}'), dev)\n"
        "    out = vm['main'](*[tvm.runtime.tensor(x, dev) for x in inputs])  # numpy arrays in\n"
        "    first = (out if hasattr(out, 'numpy') else out[0]).numpy()  # a tensor or a tuple\n\n"
        f"or: tcl run {library.name} --input x.npy [--input ...] --output y.npy\n"
    )
    return library


@dataclass
class Search:
    """MetaSchedule's evolutionary search over a network's tasks, guided by the options' cost
    model."""

    options: TuneOptions

    def protocol(self, platform: Platform) -> MeasureProtocol:
        """How each candidate is measured on ``platform``: the collector's protocol, 3 repeats
        of at least 20 ms (after its first run the kernel's data stays in cache), or with
        ``cold_cache`` 5 single runs, each after every argument but the first (the input) is
        flushed from the caches, as a kernel finds its weights inside a network whose weights
        do not fit in cache."""
        from tcl.tuning.collect import MeasureProtocol

        if self.options.cold_cache:
            return MeasureProtocol.of(platform, repeat=5, min_repeat_ms=0, cpu_cache_flush=True)
        return MeasureProtocol.of(platform)

    def strategy(
        self,
        per_round: int,
        deadline: Deadline | None = None,
        allotment: Allotment | None = None,
    ) -> Any:
        """The search strategy of every task: MetaSchedule's evolutionary search, never
        measuring a program twice, after a quick first round where ``first_round`` asks for one
        (``search.NewProgramsOnly``). Its epsilon-greedy share of random picks is taken as
        ``int(per_round * eps_greedy)``: MetaSchedule's 0.05 makes 3 of 64 and none of the at
        most 16 of a tcl round (:func:`trials_per_round`), so ``explore`` asks for a number of
        picks instead (half a pick over it, that the product does not round below it).
        ``deadline``: when a time budget ends the search; ``allotment``: how each round is
        shared among the tasks (:mod:`tcl.tuning.allot`; None: evenly); ``confident`` trims a
        task's rounds by its cost model's confidence, keeping the ``explore`` random picks;
        ``later_population`` narrows the search of a task's rounds after its first full one;
        with ``learn_earlier`` a resumed run's cost model first learns the database's programs."""
        from tvm.s_tir import meta_schedule as ms

        from tcl.integrations.tvm.search import NewProgramsOnly

        def evolutionary(population: int, picks: int, **settings: Any) -> Any:
            settings["population_size"] = population
            if self.options.explore:
                settings["eps_greedy"] = min(1.0, (self.options.explore + 0.5) / picks)
            return ms.search_strategy.EvolutionarySearch(**settings)

        options = self.options
        inner = evolutionary(options.population, per_round)
        later = None
        if options.narrower_later_rounds is not None:
            later = evolutionary(options.narrower_later_rounds, per_round)
        quick = options.first_round
        first = None
        if quick and quick < per_round:  # else a first round like the others
            first = evolutionary(
                min(options.population, options.first_round_population),
                quick,
                genetic_num_iters=options.first_round_iters,
            )
        return NewProgramsOnly(
            inner,
            first=first,
            first_trials=quick if first is not None else 0,
            deadline=deadline,
            allotment=allotment,
            confident=options.confident,
            explore=options.explore,
            later=later,
            learn_earlier=options.learn_earlier,
        )

    def start_workers(self, platform: Platform) -> Future[tuple[Any, Any]]:
        """The builder and runner that measure on ``platform``, starting in the background
        (:func:`tcl.tuning.collect.start_measurement_workers`): hand them to :meth:`run`, or
        to :meth:`stop_workers` when the run does not happen."""
        from tcl.integrations.tvm import measure as tm
        from tcl.tuning.collect import start_measurement_workers

        return start_measurement_workers(
            tm, self.protocol(platform), platform.threads, self.options.rpc
        )

    @staticmethod
    def stop_workers(workers: Future[tuple[Any, Any]]) -> None:
        """Shuts down workers from :meth:`start_workers` (once they have started)."""
        from tcl.integrations.tvm import measure as tm

        if workers.exception() is None:
            tm.shutdown(*workers.result())

    def run(
        self,
        extracted: list[Any],
        work_dir: Path,
        platform: Platform,
        per_round: int = 0,
        workers: Future[tuple[Any, Any]] | None = None,
    ) -> tuple[Any, list[Any], float, float]:
        """(database, measured batches, start time, seconds) of a search over ``extracted``,
        then of Droplet's pass where ``post_opt`` asks for one; ``per_round``: the programs
        measured per task a round (default: :func:`trials_per_round` of the options' trials);
        ``workers``: from :meth:`start_workers` (default: started here). They are shut down
        when the search ends."""
        workers = workers or self.start_workers(platform)
        try:
            return self._search(extracted, work_dir, per_round, workers, platform.tvm_target())
        finally:
            self.stop_workers(workers)

    def _search(
        self,
        extracted: list[Any],
        work_dir: Path,
        per_round: int,
        workers: Future[tuple[Any, Any]],
        target: Any,
    ) -> tuple[Any, list[Any], float, float]:
        """:meth:`run`, waiting for its workers once the tasks' tune contexts are made; the
        search has as many threads as ``target`` calls for (``measure.search_threads``)."""
        from tqdm import tqdm
        from tvm.s_tir import meta_schedule as ms

        from tcl.integrations.tvm import measure as tm
        from tcl.integrations.tvm.baselines import make_cost_model
        from tcl.integrations.tvm.callbacks import measured_only
        from tcl.integrations.tvm.console import make_progress_callback, route_log
        from tcl.integrations.tvm.search import Deadline
        from tcl.integrations.tvm.sync_runner import SyncRunner
        from tcl.tuning.allot import allotment

        options, device = self.options, tm.device_kind(target)
        route_log(options.verbose)  # before the tune contexts: they make MetaSchedule's loggers
        per_round = per_round or trials_per_round(options.trials, len(extracted))
        deadline = Deadline()  # a time budget's, set when the tuning starts
        allotted = allotment(extracted, options.allot)
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            extracted,
            str(work_dir),
            strategy=self.strategy(per_round, deadline, allotted),
            num_threads=tm.search_threads(target),
            seed=options.seed,
        )
        builder, inner = workers.result()
        builder.deadline = deadline  # a later round's batch starts no build past it
        runner = SyncRunner(inner)
        bar = tqdm(
            total=options.trials, unit="trial", disable=not options.progress, dynamic_ncols=True
        )
        callbacks = [
            measured_only(
                [
                    *ms.measure_callback.MeasureCallback.create("default"),
                    make_progress_callback(bar, [float(w) for w in weights]),
                ]
            )
        ]
        start = time.time()
        if options.minutes is not None:
            deadline.at = start + 60 * options.minutes
        try:
            database = ms.tune_tasks(
                tasks=contexts,
                task_weights=weights,
                work_dir=str(work_dir),
                max_trials_global=options.trials - options.post_opt,
                num_trials_per_iter=per_round,
                builder=builder,
                runner=runner,
                cost_model=make_cost_model(
                    options.cost_model_on(device),
                    options.model_path,
                    device=device,
                    first_model_path=options.first_round_model,
                    first_until=options.first_round or per_round,
                    handoff_at=options.hand_off,
                ),
                measure_callbacks=callbacks,
            )
            if options.post_opt:
                from tcl.integrations.tvm.droplet import post_optimize

                builder.deadline = None  # Droplet's pass has its trials whatever the time
                post_optimize(
                    contexts, weights, database, builder, runner, options.post_opt, bar.update
                )
        finally:
            bar.close()
        return database, runner.batches, start, time.time() - start


def trials_per_round(trials: int, tasks: int) -> int:
    """Every task gets about four rounds of search: the estimated network latency exists only
    once every task has a measurement, so a short first round makes it (and the tuning curves)
    start early, and each round refits the cost model on more data. At least two candidates per
    round where the budget allows, so that one failed build does not leave a task without a
    measurement."""
    tasks = max(1, tasks)
    return max(1, min(16, max(trials // (4 * tasks), min(2, trials // tasks))))


__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODELS",
    "DEFAULT_POPULATION",
    "DEFAULT_TRIALS",
    "DEFAULT_WORK_DIR",
    "Search",
    "TuneOptions",
    "TuneReport",
    "network_tasks",
    "plot_curves",
    "trials_per_round",
    "tune",
    "tune_model",
    "tune_network",
    "write_library",
    "write_report",
]
