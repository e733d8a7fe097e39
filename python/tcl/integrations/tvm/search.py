"""A MetaSchedule search strategy that measures only programs its database does not hold.

MetaSchedule's evolutionary search remembers the programs it picked in this run, and starts a
resumed run from the database's best ones, but it does not check the whole database: in a small
design space a resumed run draws programs of the earlier run again and spends trials measuring
them twice. ``NewProgramsOnly`` wraps the evolutionary search and hands out only candidates
whose trace the database does not hold for the task; a trial is then always a new program, and
``--trials`` adds that many new programs to a work directory. A task whose design spaces make
no random decisions (a reshape, an elementwise add: each space is one program) is done once it
has measured them, without the searches that would look for another.

It can also give a task a quick first round (``tcl tune --first-round K``): a search of its own,
measuring only K programs, before the rounds of the inner search. The network's latency is known
once every task has a measured program, so a cheap pass over all tasks gives a deployable
network and the tuning curve's first point long before a full round would; shared by the time
each task holds (``tcl tune --first-round-allot time``), a light task measures fewer than K and
none more, so the quick round ends sooner still. Its picks can be kept to programs that
unroll by at most N steps (``tcl tune --first-round-unroll N``,
:mod:`tcl.integrations.tvm.build_cost`): the ones that unroll further take several times as
long to build on a CPU. Its programs can be timed more briefly than the rounds' (``tcl tune
--first-round-repeats N``, :class:`tcl.integrations.tvm.sync_runner.QuickTiming`): each task's
strategy tells the runner, as it hands out a batch, whether it is a quick round's. Some of
those K can be other tasks' best programs replayed on the task, and the task's next ones can
follow in a round of their own (:mod:`tcl.integrations.tvm.quick_grafts`).

A round's picks can be shared among the tasks by the time each holds (``tcl tune --allot
time``, :mod:`tcl.tuning.allot`): each task's strategy reports what it measured to the run's
allotment and, before each round, restarts its inner search with its share of the round's
batch where that share has changed.

A task's rounds can be trimmed to what its cost model's confidence calls for (``tcl tune
--confident K``, :class:`tcl.tuning.allot.Confidence`): the inner search hands out a round's
picks best-scored first, and after each measured round the task notes how far down that order
the round's best program was; the next round measures twice as far (at least K), and the rest of
its picks are not built or run.

A task's rounds after its first full one can search with a narrower population (``tcl tune
--later-population N``: ``later``, another native strategy): the first full round is the
pre-trained model's, which picks better from more candidates, and the rounds after it are the
learner's, whose search is most of a round's time on a convolution network.

A resumed run can start where the last one ended (``tcl tune --learn-earlier``): before the
search, the cost model learns every program the database holds of the task (on the run's
target), as if this run had measured it, and a task the database holds has had its first
rounds: no quick round, and the rounds' narrower search from the start where ``later`` is
given. Without it a resumed run's model learns only the run's own measurements, as
MetaSchedule's does.

A time budget (``tcl tune --minutes``) ends the search here too: past its deadline a task that
has had its first round has no more candidates, and MetaSchedule's task scheduler retires the
task itself. Every task still gets its first round, so that the network is tuned throughout. (A
measure callback that retires every task at once can do it while the gradient scheduler is
choosing among them, which then picks a retired task and fails a check.) The builder keeps to
it too (:mod:`tcl.integrations.tvm.deadline`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tvm.ir.utils import derived_object
from tvm.s_tir.meta_schedule.search_strategy import PySearchStrategy

from tcl.integrations.tvm.build_cost import WithinUnroll, within_unroll
from tcl.integrations.tvm.deadline import Deadline
from tcl.integrations.tvm.measure import entry_key, task_of, text_of_trace, workload_key
from tcl.integrations.tvm.quick_grafts import QuickGrafts, RoundsDue
from tcl.integrations.tvm.register_block import RegisterBlock
from tcl.integrations.tvm.sync_runner import QuickTiming
from tcl.tuning.allot import FAILED_COST, Allotment, Confidence, quick_picks_of

if TYPE_CHECKING:
    from tcl.integrations.tvm.siblings import RunBests, Siblings


def mean_secs(run_secs: Any) -> float:
    """A measurement's mean cost (s) from its runs (TVM floats)."""
    return sum(float(x) for x in run_secs) / len(run_secs)


@derived_object
class NewProgramsOnly(PySearchStrategy):
    """``inner`` (a native search strategy), less the programs already in the database.
    ``attempts``: batches of only known programs drawn in a row before the task is given up as
    exhausted (each draw still avoids every program drawn before it in this run). ``first``:
    another native strategy that searches the task's first round and measures ``first_trials``
    programs of it, ``inner`` the rounds after. ``deadline``: no candidates once it has
    passed, but for the task's first round. ``allotment``: the run's sharing of each round
    among the tasks (:class:`tcl.tuning.allot.Allotment`; None: the batch as given).
    ``confident``: after a task's first round, each round measures only as many of its
    best-scored picks as the task's :class:`tcl.tuning.allot.Confidence` keeps, at least this
    many (0: every pick), and the last ``explore`` picks (the search's random ones).
    ``later``: another native strategy that searches the task's rounds after its first full
    one (None: ``inner`` throughout). ``learn_earlier``: on a resumed run, the cost model
    first learns the task's programs in the database, and a task that has some starts past its
    first rounds (module docstring). ``transplants``: where given (a
    :class:`tcl.integrations.tvm.transplant.Transplants`), the quick round measures the task's
    transplants in place of as many of ``first``'s picks, and its next round its next ones
    without a search, a round the inner searches do not count
    (:class:`tcl.integrations.tvm.quick_grafts.QuickGrafts`). ``quick_shares``: where given,
    each task's quick round measures by its share of the network's time, at least one program
    and at most ``first_trials`` (:func:`tcl.tuning.allot.quick_picks_of`); its transplants
    then take the place of picks only where it has two or more, unless they fill the round.
    ``quick_unroll``: where given, the quick round's picks by the cost model and its
    transplants are programs that unroll by at most this many steps
    (:class:`tcl.integrations.tvm.build_cost.WithinUnroll`); the best-scored program it passed
    over leads the round of transplants.
    ``share_best``: where given (the run's :class:`tcl.integrations.tvm.siblings.RunBests`),
    each task tells it what its batches measured, and each full round measures up to its
    ``count`` of the other tasks' best programs replayed on the task, in place of as many of
    the search's lowest-scored picks. ``register_block``: on a CPU, the best program of each
    task's quick round, rewritten to keep a block of its output in vector registers
    (:mod:`tcl.integrations.tvm.register_block`), leads the round after it. ``rounds_due``:
    where given (the run's :class:`tcl.integrations.tvm.quick_grafts.RoundsDue`), the task's
    grafts are followed there, for the task scheduler."""

    def __init__(
        self,
        inner: Any,
        attempts: int = 4,
        first: Any = None,
        first_trials: int = 0,
        deadline: Deadline | None = None,
        allotment: Allotment | None = None,
        confident: int = 0,
        explore: int = 0,
        later: Any = None,
        learn_earlier: bool = False,
        transplants: Any = None,
        quick_shares: Allotment | None = None,
        quick_unroll: int | None = None,
        quick_timing: QuickTiming | None = None,
        share_best: RunBests | None = None,
        register_block: bool = False,
        rounds_due: RoundsDue | None = None,
    ) -> None:
        self.inner, self.attempts, self.later = inner, attempts, later
        self.register_block, self.rounds_due = register_block, rounds_due
        self.share_best = share_best
        self.siblings: Siblings | None = None  # the task's view of ``share_best``
        self.quick_timing = quick_timing
        self.learn_earlier, self.transplants = learn_earlier, transplants
        self.grafts = QuickGrafts(transplants)  # the first rounds' programs no search picked
        self.within: WithinUnroll | None = None  # the quick round's bound model while it runs
        self.grafted = 0  # of the batch just handed out, how many were transplants
        self.quick_picks = 0  # the model's picks in the quick round (0: transplants alone)
        self.first, self.first_trials = first, first_trials
        self.deadline = deadline or Deadline()
        self.allotment, self.quick_shares = allotment, quick_shares
        self.quick_unroll = quick_unroll
        self.confident, self.explore = confident, explore
        self.confidence: Confidence | None = None  # the task's own, made in pre_tuning
        self.per_round = 0  # a round's even batch
        self.running: Any = None  # the search started for the task's full rounds, if any
        self.running_batch = 0  # the batch it runs with
        self.rounds = 0  # measured batches of this task, but for its round of transplants
        self.resumed = False  # whether it starts past its first rounds (``learn_earlier``)
        self.context: Any = None  # the task's tune context, until pre_tuning
        self.known: set[str] = set()
        self.workload = ""
        self.task = ""  # the task's key for the cost model (``measure.task_of``)
        self.skipped = 0
        self.space_size = 0  # programs in the task's design spaces where they decide nothing
        self.tuning_args: tuple[Any, ...] = ()

    @property
    def past_first_round(self) -> bool:
        """Whether the task has had its first round: measured in this run, or, with
        ``learn_earlier``, in the run its database resumes."""
        return self.rounds > 0 or self.resumed

    @property
    def quick(self) -> bool:
        """Whether the task is in its quick first round."""
        return self.first is not None and not self.past_first_round

    @property
    def exhausted(self) -> bool:
        """Whether every program of a task whose design spaces decide nothing is known: a
        search would only draw them again (four searches for nothing: 4 s each on a 2-core
        Zen 3, at population 128)."""
        return 0 < self.space_size <= len(self.known)

    @property
    def current(self) -> Any:
        """The strategy searching the task's present round."""
        if self.quick:
            return self.first
        past_first = self.resumed or self.rounds > (self.first is not None)
        return self.later if self.later is not None and past_first else self.inner

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.workload = workload_key(context.mod)
        if self.rounds_due is not None:
            self.rounds_due.track(self.workload, self.grafts)
        wanted = self.learn_earlier or (self.transplants is not None and self.first is not None)
        wanted = wanted or self.share_best is not None or self.register_block
        self.context = context if wanted else None
        if self.transplants is not None:
            self.task = task_of(context)
        for strategy in (self.inner, self.first, self.later):
            if strategy is not None:
                strategy._initialize_with_tune_context(context)

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Any],
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        self.resumed = False
        if database is not None:  # a resumed run's programs of this task, read once
            records = [
                record
                for record in database.get_all_tuning_records()
                if entry_key(record.workload) == self.workload
            ]
            self.known = {text_of_trace(record.trace) for record in records}
            costs = [mean_secs(record.run_secs) for record in records if record.run_secs]
            for allotment in self._allotments() if costs else []:
                allotment.measured(self.workload, costs)
            if self.learn_earlier and self.context is not None and cost_model is not None:
                self.resumed = learn_measured(cost_model, self.context, records) > 0
        context, self.context = self.context, None  # it holds its strategy: no cycle outlives
        if self.share_best is not None and context is not None:
            from tcl.integrations.tvm.siblings import Siblings

            postprocs = list(context.space_generator.postprocs)
            self.siblings = Siblings(self.share_best, self.workload, context.mod, postprocs)
        self.space_size = (
            0 if any(sch.trace.decisions for sch in design_spaces) else len(design_spaces)
        )
        self.tuning_args = (max_trials, num_trials_per_iter, design_spaces, database, cost_model)
        self.per_round, self.rounds = num_trials_per_iter, 0
        self.running, self.running_batch = None, 0
        self.confidence = Confidence(self.confident) if self.confident else None
        self.grafts.clear()
        self.grafts.blocker = None
        if self.register_block and self.quick and context is not None:
            self.grafts.blocker = RegisterBlock.of_context(context)
        self.within = None
        if self.quick and self.transplants is not None and context is not None:
            batch, fits = self.quick_batch(), self._quick_fits
            self.grafts.prepare(context, cost_model, self.known, batch, self.first_trials, fits)
        if self.quick:  # the quick round's own batch size, less its transplants
            self.quick_picks = picks = self.quick_batch() - len(self.grafts.quick)
            if not picks:  # transplants fill it: no search, as in their round after it
                return
            if self.quick_unroll is not None and cost_model is not None:
                cost_model = self.within = WithinUnroll(cost_model, self.quick_unroll)
            self.first.pre_tuning(max_trials, picks, design_spaces, database, cost_model)
        else:
            self._start()

    def batch(self, per_round: int) -> int:
        """This task's programs a round where the round measures ``per_round`` a task."""
        if self.allotment is None:
            return per_round
        return self.allotment.picks(self.workload, per_round)

    def quick_batch(self) -> int:
        """This task's programs in its quick round: by ``quick_shares`` where given (never
        more than ``first_trials``), else as a round's (:meth:`batch`)."""
        if self.quick_shares is None:
            return self.batch(self.first_trials)
        return quick_picks_of(self.first_trials, self.quick_shares.share(self.workload))

    def _quick_fits(self, candidate: Any) -> bool:
        """Whether the quick round may measure ``candidate`` (``quick_unroll``)."""
        return self.quick_unroll is None or within_unroll(candidate, self.quick_unroll)

    def _start(self) -> None:
        """(Re)start the search of the task's present full round with this task's batch,
        where it is not running with it."""
        want, search = self.batch(self.per_round), self.current
        if search is self.running and want == self.running_batch:
            return
        if self.running is not None:
            self.running.post_tuning()
        max_trials, _, design_spaces, database, cost_model = self.tuning_args
        search.pre_tuning(max_trials, want, design_spaces, database, cost_model)
        self.running, self.running_batch = search, want

    def post_tuning(self) -> None:
        if self.quick:
            if self.quick_picks:
                self.first.post_tuning()
        elif self.running is not None:
            self.running.post_tuning()

    def generate_measure_candidates(self) -> list[Any] | None:
        if self.quick_timing is not None:  # the runner measures what this hands out next
            self.quick_timing.now = self.quick
        if self.past_first_round and (self.deadline.passed() or self.exhausted):
            return None
        if not self.quick and self.grafts.round_due:
            # the task's round of its next transplants, once: no search runs, and the
            # evolutionary search is not told of it (it starts with the round after)
            grafts = self.grafts.round_of_transplants(self.known, self.workload)
            transplants = self._hand_out(grafts, set())
            if transplants:
                self.deadline.binding = True
                return transplants
        if self.quick and not self.quick_picks:  # a quick round of transplants alone
            self.deadline.binding = False
            return self._hand_out(self.grafts.take_quick(), set())
        if not self.quick:
            self._start()
        for _ in range(self.attempts):
            candidates = self.current.generate_measure_candidates()
            if candidates is None:
                return None
            fresh, drawn = [], set()
            for candidate in candidates:
                key = text_of_trace(candidate.sch.trace)
                if key not in self.known and key not in drawn:
                    drawn.add(key)
                    fresh.append((key, candidate))
            self.skipped += len(candidates) - len(fresh)
            if fresh:
                fresh = self._trimmed(fresh)
                shared: list[tuple[str, Any]] = []
                if self.siblings is not None and not self.quick:  # a full round's share
                    fresh, shared = self.siblings.into(fresh, self.known | drawn, self.explore)
                grafts = self.grafts.take_quick() + shared  # the quick ones handed out once
                grafts = self._hand_out(grafts, drawn)
                self.known.update(key for key, _ in fresh)
                self.deadline.binding = self.past_first_round
                return [candidate for _, candidate in fresh] + grafts
        return None

    def _hand_out(self, grafts: list[tuple[str, Any]], taken: set[str]) -> list[Any]:
        """The candidates of ``grafts`` (trace key, measure candidate: transplants, or a
        program the quick round passed over) whose key is not in ``taken`` (the programs
        known, or just drawn by the search), now known; ``grafted`` counts them."""
        out = [(key, candidate) for key, candidate in grafts if key not in taken]
        self.known.update(key for key, _ in out)
        self.grafted = len(out)
        return [candidate for _, candidate in out]

    def _trimmed(self, fresh: list[Any]) -> list[Any]:
        """A round's fresh picks (best-scored first, the search's random ones last), less
        those the task's confidence does not measure; the quick round and a task's first
        round measure all."""
        if self.confidence is None or self.quick:
            return fresh
        keep = self.confidence.keep(len(fresh))
        return fresh[:keep] + fresh[max(keep, len(fresh) - self.explore) :]

    def notify_runner_results(self, measure_candidates: list[Any], results: list[Any]) -> None:
        if self.siblings is not None:
            self.siblings.measured(measure_candidates, results)
        was_quick = self.quick
        own = len(measure_candidates) - self.grafted  # the search's own come first
        self.grafted = 0
        if was_quick:
            self.grafts.block_best(measure_candidates, results, self.known)
        if was_quick and not self.quick_picks:  # its quick round, transplants alone
            self.rounds += 1
            self._measured(results)
            return
        if own == 0:  # the round of transplants: no search ran it, and no hand-off counts it
            self.grafts.measured_apart(self.task, results)
            self._measured(results)
            return
        self.current.notify_runner_results(measure_candidates[:own], results[:own])
        if self.confidence is not None and not was_quick:
            self.confidence.measured(
                [
                    mean_secs(r.run_secs) if r.run_secs and not r.error_msg else FAILED_COST
                    for r in results
                ]
            )
        self.rounds += 1
        if was_quick:  # the quick round is over: the inner search from the next round
            self.first.post_tuning()
            if self.within is not None:  # its best pick past the bound leads the next round
                passed = [p for p in self.within.passed_over if p[0] not in self.known]
                self.grafts.passed_over, self.within = passed[:1], None
        self._measured(results)

    def _allotments(self) -> list[Allotment]:
        """The run's sharing of its rounds and of its round of transplants, where given."""
        shares = self.transplants.shares if self.transplants is not None else None
        return [a for a in (self.allotment, shares) if a is not None]

    def _measured(self, results: list[Any]) -> None:
        """Tells the run's allotments what the task's round measured."""
        costs = [mean_secs(r.run_secs) for r in results if r.run_secs]
        for allotment in self._allotments():
            allotment.measured(self.workload, costs)

    def clone(self) -> Any:
        first = self.first.clone() if self.first is not None else None
        return NewProgramsOnly(
            self.inner.clone(),
            self.attempts,
            first,
            self.first_trials,
            self.deadline,
            self.allotment,
            self.confident,
            self.explore,
            self.later.clone() if self.later is not None else None,
            self.learn_earlier,
            self.transplants,
            self.quick_shares,
            self.quick_unroll,
            self.quick_timing,
            self.share_best,
            self.register_block,
            self.rounds_due,
        )


def learn_measured(cost_model: Any, context: Any, records: list[Any]) -> int:
    """``cost_model`` updated with the programs of ``records`` (a task's, from the database)
    that ran on ``context``'s target, as if measured now; returns how many it learnt."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    target = str(context.target)
    ran = [
        record
        for record in records
        if record.run_secs
        and mean_secs(record.run_secs) < FAILED_COST
        and str(record.target) == target
    ]
    if ran:
        cost_model.update(
            context,
            [record.as_measure_candidate() for record in ran],
            [RunnerResult(run_secs=list(record.run_secs), error_msg=None) for record in ran],
        )
    return len(ran)
