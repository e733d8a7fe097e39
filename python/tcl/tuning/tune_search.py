"""The search of ``tcl tune``: MetaSchedule's evolutionary search over a network's tasks,
guided by the options' cost model, its measurement protocol and workers, and how many programs
of a task each round measures."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcl.tuning.options import TuneOptions
from tcl.tuning.platforms import Platform

if TYPE_CHECKING:
    from tcl.integrations.tvm.deadline import Deadline
    from tcl.integrations.tvm.quick_grafts import RoundsDue
    from tcl.integrations.tvm.sync_runner import QuickTiming
    from tcl.integrations.tvm.transplant import Transplants
    from tcl.tuning.allot import Allotment
    from tcl.tuning.collect import MeasureProtocol


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
        do not fit in cache; ``repeat_ms`` sets the repeats' least length."""
        from tcl.tuning.collect import MeasureProtocol

        if self.options.cold_cache:
            return MeasureProtocol.of(platform, repeat=5, min_repeat_ms=0, cpu_cache_flush=True)
        if self.options.repeat_ms is not None:
            return MeasureProtocol.of(platform, min_repeat_ms=self.options.repeat_ms)
        return MeasureProtocol.of(platform)

    def strategy(
        self,
        per_round: int,
        deadline: Deadline | None = None,
        allotment: Allotment | None = None,
        transplants: Transplants | None = None,
        quick_shares: Allotment | None = None,
        quick_timing: QuickTiming | None = None,
        rounds_due: RoundsDue | None = None,
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
        ``later_population`` narrows the search of a task's rounds after its first full one,
        ``later_iters`` sets its evolution steps;
        with ``learn_earlier`` a resumed run's cost model first learns the database's programs;
        ``transplants`` (:meth:`transplants`) take some of the quick round's picks, and
        ``quick_shares`` (``first_round_allot``) share it among the tasks, and
        ``first_round_unroll`` keeps its picks to programs that build fast, and
        ``quick_timing`` (:meth:`quick_timing`) tells the runner which batches are its;
        ``share_best`` gives each full round the other tasks' best programs so far, and
        ``register_block`` the round after the quick one its best program register-blocked;
        ``rounds_due`` follows which tasks' rounds of transplants are to come, for the task
        scheduler."""
        from tvm.s_tir import meta_schedule as ms

        from tcl.integrations.tvm.search import NewProgramsOnly
        from tcl.integrations.tvm.siblings import RunBests

        def evolutionary(population: int, picks: int, **settings: Any) -> Any:
            settings["population_size"] = population
            if self.options.explore:
                settings["eps_greedy"] = min(1.0, (self.options.explore + 0.5) / picks)
            return ms.search_strategy.EvolutionarySearch(**settings)

        options = self.options
        inner = evolutionary(options.population, per_round)
        later = None
        if options.own_later_rounds:
            later = evolutionary(
                options.later_population or options.population,
                per_round,
                genetic_num_iters=options.later_iters,
            )
        quick = options.first_round
        first = None
        if quick:  # even where a round is as small: its search is the cheap part
            quick_population = min(options.population, options.first_round_population)
            first = evolutionary(
                quick_population,
                quick,
                genetic_num_iters=options.first_round_iters,
                # exactly the population's random programs, not MetaSchedule's 50 or more
                init_min_unmeasured=quick_population,
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
            transplants=transplants if first is not None else None,
            quick_shares=quick_shares if first is not None else None,
            quick_unroll=options.first_round_unroll if first is not None else None,
            quick_timing=quick_timing if first is not None else None,
            share_best=RunBests(options.share_best) if options.share_best else None,
            register_block=options.register_block and first is not None,
            rounds_due=rounds_due if first is not None else None,
        )

    def quick_timing(self) -> QuickTiming | None:
        """How the runner times and the builder builds a quick first round's programs, where
        ``first_round_repeats`` or ``first_round_opt_level`` asks for its own (None: as the
        rounds')."""
        from tcl.integrations.tvm.sync_runner import QuickTiming

        options = self.options
        own = options.first_round_repeats or options.first_round_opt_level is not None
        if not (options.first_round and own):
            return None
        return QuickTiming(options.first_round_repeats, options.first_round_opt_level)

    def transplants(self, device: str) -> Transplants | None:
        """Other tasks' best programs as each task's first picks, where ``transplants`` asks
        for them: from the ``donors`` file, or those packaged for ``device`` and the run's
        convolution layout (None where there are none: no GPU donors are packaged)."""
        from tcl.integrations.tvm.transplant import (
            DONORS,
            Transplants,
            load_donors,
            packaged_donors,
        )

        options = self.options
        wanted = options.transplants or options.transplant_round
        if not wanted or not (options.donors or device in DONORS):
            return None
        donors = (
            load_donors(options.donors)
            if options.donors
            else packaged_donors(device, options.conv_layout)
        )
        return Transplants(donors, count=options.transplants, later=options.transplant_round)

    def start_workers(self, platform: Platform) -> Future[tuple[Any, Any]]:
        """The builder and runner that measure on ``platform``, starting in the background
        (:func:`tcl.tuning.collect.start_measurement_workers`): hand them to :meth:`run`, or
        to :meth:`stop_workers` when the run does not happen."""
        from tcl.integrations.tvm import measure as tm
        from tcl.tuning.collect import start_measurement_workers

        options = self.options
        return start_measurement_workers(
            tm, self.protocol(platform), platform.threads, options.rpc, options.candidate_opt_level
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
        workers: Future[tuple[Any, Any]] | None = None,
    ) -> tuple[Any, list[Any], float, float]:
        """(database, measured batches, start time, seconds) of a search over ``extracted``,
        then of Droplet's pass where ``post_opt`` asks for one, each task's rounds measuring the
        options' ``per_round`` programs (0: :func:`trials_per_round` of their trials);
        ``workers``: from :meth:`start_workers` (default: started here). They are shut down
        when the search ends."""
        workers = workers or self.start_workers(platform)
        try:
            return self._search(extracted, work_dir, workers, platform.tvm_target())
        finally:
            self.stop_workers(workers)

    def _search(
        self,
        extracted: list[Any],
        work_dir: Path,
        workers: Future[tuple[Any, Any]],
        target: Any,
    ) -> tuple[Any, list[Any], float, float]:
        """:meth:`run`, waiting for its workers once the tasks' tune contexts are made; the
        search has as many threads as ``target`` calls for (``measure.search_threads``)."""
        from tvm.s_tir import meta_schedule as ms

        from tcl.integrations.tvm import measure as tm
        from tcl.integrations.tvm.callbacks import measured_only
        from tcl.integrations.tvm.console import advance, make_progress_callback, route_log
        from tcl.integrations.tvm.deadline import Deadline
        from tcl.integrations.tvm.quick_grafts import RoundsDue
        from tcl.integrations.tvm.sync_runner import SyncRunner

        options, device = self.options, tm.device_kind(target)
        route_log(options.verbose)  # before the tune contexts: they make MetaSchedule's loggers
        per_round = options.per_round or trials_per_round(options.trials, len(extracted))
        deadline = Deadline()  # a time budget's, set when the tuning starts
        transplants, quick_timing = self.transplants(device), self.quick_timing()
        rounds_due = RoundsDue()  # the tasks whose rounds of transplants are to come
        strategy = self._strategy_of(
            extracted, per_round, deadline, transplants, quick_timing, rounds_due
        )
        contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
            extracted,
            str(work_dir),
            strategy=strategy,
            num_threads=tm.search_threads(target),
            seed=options.seed,
        )
        builder, inner = workers.result()
        builder.deadline = deadline  # a later round's batch starts no build past it
        builder.quick = quick_timing
        runner = SyncRunner(inner, quick_timing)
        bar, clock = self.progress_bar(deadline)
        callbacks = [
            measured_only(
                [
                    *ms.measure_callback.MeasureCallback.create("default"),
                    make_progress_callback(bar, [float(w) for w in weights], clock),
                ]
            )
        ]
        start = time.time()
        if options.minutes is not None:
            deadline.start(start, 60 * options.minutes)
        try:
            database = ms.tune_tasks(
                tasks=contexts,
                task_weights=weights,
                work_dir=str(work_dir),
                max_trials_global=options.trials - options.post_opt,
                num_trials_per_iter=per_round,
                task_scheduler=self.task_scheduler(per_round, rounds_due),
                builder=builder,
                runner=runner,
                cost_model=self._cost_model(device, per_round, transplants),
                measure_callbacks=callbacks,
            )
            if options.post_opt:
                from tcl.integrations.tvm.droplet import post_optimize

                builder.deadline = None  # Droplet's pass has its trials whatever the time
                builder.quick = None  # and its builds are the rounds'
                post_optimize(
                    contexts,
                    weights,
                    database,
                    builder,
                    runner,
                    options.post_opt,
                    lambda n: advance(bar, n, clock),
                )
        finally:
            advance(bar, 0, clock)  # a bar of seconds to where the search ended
            bar.close()
        return database, runner.batches, start, time.time() - start

    def task_scheduler(self, per_round: int, rounds_due: RoundsDue | None = None) -> Any:
        """Which task has each next round of ``per_round`` programs: ``task_scheduler``'s
        (:func:`tcl.integrations.tvm.scheduler.task_scheduler`), told by ``rounds_due`` which
        tasks' rounds of transplants are to come."""
        from tcl.integrations.tvm.scheduler import task_scheduler

        return task_scheduler(self.options.task_scheduler, per_round, rounds_due)

    def _strategy_of(
        self,
        extracted: list[Any],
        per_round: int,
        deadline: Deadline,
        transplants: Transplants | None,
        quick_timing: QuickTiming | None,
        rounds_due: RoundsDue | None = None,
    ) -> Any:
        """:meth:`strategy` for the tasks ``extracted``: each allotment made from their weights,
        the transplants' round shared as ``transplant_allot`` says."""
        from tcl.tuning.allot import allotment

        options = self.options
        if transplants is not None:
            sharing = "even" if options.transplant_allot == "even" else "time"
            transplants.shares = allotment(extracted, sharing)
            transplants.exact_growth = options.transplant_allot == "time-exact"
        return self.strategy(
            per_round,
            deadline,
            allotment(extracted, options.allot),
            transplants,
            allotment(extracted, options.first_round_allot),
            quick_timing,
            rounds_due,
        )

    def _cost_model(self, device: str, per_round: int, transplants: Transplants | None) -> Any:
        """The run's cost model (``make_cost_model``): the rounds of transplants uncounted by a
        hand-off to the learner."""
        from tcl.integrations.tvm.baselines import make_cost_model

        options = self.options
        return make_cost_model(
            options.cost_model_on(device),
            options.model_path,
            device=device,
            first_model_path=options.first_round_model,
            first_until=options.first_round or per_round,
            handoff_at=options.hand_off,
            uncounted=transplants.apart if transplants is not None else None,
            conv_layout=options.conv_layout,
        )

    def progress_bar(self, deadline: Deadline) -> tuple[Any, Callable[[], float] | None]:
        """The run's progress bar (tqdm) and its clock: a bar of the trials, or under a time
        budget of the budget's seconds, read from ``deadline`` (the clock; None for trials)."""
        from tqdm import tqdm

        options = self.options
        budget = None if options.minutes is None else round(60 * options.minutes)
        bar = tqdm(
            total=options.trials if budget is None else budget,
            unit="trial" if budget is None else "s",
            bar_format=None if budget is None else "{l_bar}{bar}| {n_fmt}/{total_fmt} s{postfix}",
            disable=not options.progress,
            dynamic_ncols=True,
        )
        return bar, None if budget is None else deadline.elapsed


def trials_per_round(trials: int, tasks: int) -> int:
    """Every task gets about four rounds of search: the estimated network latency exists only
    once every task has a measurement, so a short first round makes it (and the tuning curves)
    start early, and each round refits the cost model on more data. At least two candidates per
    round where the budget allows, so that one failed build does not leave a task without a
    measurement."""
    tasks = max(1, tasks)
    return max(1, min(16, max(trials // (4 * tasks), min(2, trials // tasks))))


__all__ = ["Search", "trials_per_round"]
