"""tcl.integrations.tvm.search: a resumed search hands out no program its database holds; a
quick first round measures as many programs as asked, then the inner search takes over; past a
deadline a task has its first round and no more; a task whose design space is one program
stops searching once it is measured; a confident task's rounds measure as far down the cost
model's order as its last rounds' best programs were; the rounds after a task's first full one
are searched by the later strategy; a resumed task's cost model first learns its stored runs;
a quick round's transplants take the place of as many of its search's picks, and a round of
the next ones follows it before the task's first full round; a quick round shared by time
measures fewer of a light task; a quick round bound by unroll measures the best-scored programs
and transplants within the bound; a quick round scores exactly its population of random
programs; a full round measures the other tasks' best programs in place of its lowest-scored
picks; the quick round's best program register-blocked leads the round after it."""

from __future__ import annotations

from typing import Any

import pytest

from conftest import matmul_module, scored_by_candidate, scored_by_trace, space_postprocs

pytestmark = pytest.mark.tvm


def _drawn(strategy: Any, mod: Any, target: Any, database: Any) -> list[str]:
    """Every program ``strategy`` hands out for ``mod`` until it is done, as trace keys."""
    return [key for batch in _batches(strategy, mod, target, database) for key in batch]


def _batches(
    strategy: Any,
    mod: Any,
    target: Any,
    database: Any,
    cost_model: Any = None,
    costs: Any = None,
    max_trials: int = 48,
    handed: list[Any] | None = None,
    after: Any = None,
) -> list[list[str]]:
    """The batches of programs ``strategy`` hands out for ``mod`` until it is done (16 a
    round, ``max_trials`` in all), as trace keys. ``costs(round, n)``: each round's measured
    costs (s) in the order of its candidates (default: 1 ms each). ``handed``: where given, the
    candidates handed out are appended to it; ``after()``: where given, called once each batch
    is measured."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.measure import text_of_trace

    context = ms.TuneContext(
        mod=mod,
        target=target,
        space_generator="post-order-apply",
        search_strategy=strategy,
        task_name="main",
        rand_state=0,
        num_threads=1,
    )
    context.pre_tuning(
        max_trials=max_trials,
        num_trials_per_iter=16,
        design_spaces=context.generate_design_space(),
        database=database,
        cost_model=cost_model,
    )
    batches: list[list[str]] = []
    while (candidates := context.generate_measure_candidates()) is not None:
        batches.append([text_of_trace(c.sch.trace) for c in candidates])
        if handed is not None:
            handed.extend(candidates)
        measured = costs(len(batches) - 1, len(candidates)) if costs else [1e-3] * len(candidates)
        results = [ms.runner.RunnerResult([cost], None) for cost in measured]
        context.notify_runner_results(candidates, results)
        if after is not None:
            after()
    return batches


def _small_matmul(n: int = 8) -> tuple[Any, Any]:
    """A small matmul of n x n (at 8 its design space is small enough that random draws
    repeat), and a target."""
    import tvm
    from tvm import te

    a = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * a[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, c])})
    return mod, tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})


def _logged(name: str, log: list[str]) -> Any:
    """ReplayTrace that logs, as ``name:event``, when it starts, searches and stops."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    @derived_object
    class Logged(ms.search_strategy.PySearchStrategy):
        def __init__(self) -> None:
            self.inner = ms.search_strategy.ReplayTrace()

        def _initialize_with_tune_context(self, context: Any) -> None:
            self.inner._initialize_with_tune_context(context)

        def pre_tuning(self, *args: Any) -> None:
            log.append(f"{name}:start")
            self.inner.pre_tuning(*args)

        def post_tuning(self) -> None:
            log.append(f"{name}:stop")
            self.inner.post_tuning()

        def generate_measure_candidates(self) -> Any:
            log.append(f"{name}:search")
            return self.inner.generate_measure_candidates()

        def notify_runner_results(self, candidates: list[Any], results: list[Any]) -> None:
            self.inner.notify_runner_results(candidates, results)

        def clone(self) -> Any:
            return _logged(name, log)

    return Logged()


def _logged_rounds(log: list[str], first_trials: int = 2, **options: Any) -> Any:
    """NewProgramsOnly whose quick, inner and later searches log to ``log`` (``_logged``)."""
    from tcl.integrations.tvm.search import NewProgramsOnly

    return NewProgramsOnly(
        _logged("inner", log),
        first=_logged("first", log),
        first_trials=first_trials,
        later=_logged("later", log),
        **options,
    )


def test_programs_the_database_holds_are_never_drawn_again() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul()
    database = ms.database.MemoryDatabase()
    workload = database.commit_workload(mod)
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    known = set()
    for candidate in tm.random_candidates(mod, target, 16, seed=1):
        known.add(tm.text_of_trace(candidate.sch.trace))
        record = ms.database.TuningRecord(candidate.sch.trace, workload, [1e-3], target, args)
        database.commit_tuning_record(record)
    plain = _drawn(ms.search_strategy.ReplayTrace(), mod, target, database)
    assert set(plain) & known, "the stock strategy should draw stored programs again here"
    fresh = _drawn(NewProgramsOnly(ms.search_strategy.ReplayTrace()), mod, target, database)
    assert fresh and not set(fresh) & known and len(fresh) == len(set(fresh))


def test_a_quick_first_round_measures_k_programs_then_the_inner_search_goes_on() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul()
    quick = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(), first=ms.search_strategy.ReplayTrace(), first_trials=3
    )
    batches = _batches(quick, mod, target, ms.database.MemoryDatabase())
    sizes = [len(b) for b in batches]
    assert sizes[0] == 3 and sizes[1] > 3, sizes  # then the inner search's batches of 16
    keys = [key for batch in batches for key in batch]
    assert len(keys) == len(set(keys))  # the inner search draws none of the quick round again
    # A clone (one per task) starts with its own quick round.
    again = _batches(quick.clone(), mod, target, ms.database.MemoryDatabase())
    assert len(again[0]) == 3


@pytest.mark.parametrize("iters", [0, 2])
def test_a_quick_round_measures_the_cost_models_top_picks_of_its_search(iters: int) -> None:
    """With ``first_round_iters`` 0 the quick round scores its random programs once and measures
    the best-scored; with N it scores them and N generations of mutants (N + 1 calls)."""
    import zlib

    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    scored: list[dict[str, float]] = []  # each predict call: trace key -> score

    def by_hash(key: str) -> float:
        """A program's score by a hash of its trace: fixed, and unrelated to its speed."""
        return zlib.crc32(key.encode()) / 2**32

    options = TuneOptions(trials=64, first_round=3, first_round_iters=iters)
    strategy = Search(options).strategy(16)
    mod, target = _small_matmul()
    batches = _batches(
        strategy, mod, target, ms.database.MemoryDatabase(), scored_by_trace(by_hash, scored)
    )
    first_calls = iters + 1  # the initial population, then each generation
    assert len(batches[0]) == 3
    assert len(scored) > first_calls  # the rounds after score too
    seen = {k: v for call in scored[:first_calls] for k, v in call.items()}
    assert set(batches[0]) <= set(seen)
    # The round's picks are its best-scored programs (none is drawn at random: 5% of 3 picks).
    best = sorted(seen.values(), reverse=True)[:3]
    assert sorted((seen[k] for k in batches[0]), reverse=True) == best


@pytest.mark.parametrize("population", [24, 64])
def test_a_quick_round_scores_exactly_its_population_of_random_programs(population: int) -> None:
    """``first_round_population`` random programs a task, also below MetaSchedule's own floor
    of 50 (``init_min_unmeasured``), which would draw 72 at 24 (three batches)."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    scored: list[dict[str, float]] = []
    call_of_each_score: list[int] = []

    def score(key: str) -> float:
        call_of_each_score.append(len(scored))  # the predict call being answered
        return float(len(key))

    options = TuneOptions(trials=64, first_round=2, first_round_population=population)
    mod, target = _small_matmul(16)
    batches = _batches(
        Search(options).strategy(16),
        mod,
        target,
        ms.database.MemoryDatabase(),
        scored_by_trace(score, scored),
        max_trials=18,
    )
    assert len(batches[0]) == 2
    assert call_of_each_score.count(0) == population  # the quick round's one scoring


def test_a_quick_round_measures_its_transplants_in_place_of_its_search_s_picks() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.integrations.tvm.transplant import Donor, Transplants

    mod, target = _small_matmul(16)
    [program] = tm.random_candidates(mod, target, 1, seed=3)
    donor = Donor.of(program.sch.trace, mod)
    grafted = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(),
        first=ms.search_strategy.ReplayTrace(),
        first_trials=3,
        transplants=Transplants([donor], count=2),  # one program to offer
    )
    batches = _batches(grafted, mod, target, ms.database.MemoryDatabase())
    key = tm.text_of_trace(program.sch.trace)
    assert len(batches[0]) == 3 and batches[0][-1] == key  # two of the search's, then it
    assert sum(key in batch for batch in batches) == 1  # never drawn again
    # Past the quick round nothing changes; a clone offers it again to its own task.
    assert len(batches[1]) > 3
    assert _batches(grafted.clone(), mod, target, ms.database.MemoryDatabase())[0][-1] == key
    # A program the database holds is not transplanted again: the search's three.
    database = ms.database.MemoryDatabase()
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    database.commit_tuning_record(
        ms.database.TuningRecord(
            program.sch.trace, database.commit_workload(mod), [1e-3], target, args
        )
    )
    again = _batches(grafted.clone(), mod, target, database)[0]
    assert len(again) == 3 and key not in again


def test_a_round_of_the_next_transplants_follows_the_quick_round_without_a_search() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.transplant import Donor, Transplants

    mod, target = _small_matmul(16)
    programs = tm.random_candidates(mod, target, 6, seed=5)
    keys = list(dict.fromkeys(tm.text_of_trace(p.sch.trace) for p in programs))
    assert len(keys) >= 4  # distinct programs to offer: one for the quick round, two after
    log: list[str] = []
    donors = [Donor.of(p.sch.trace, mod) for p in programs]
    task = _logged_rounds(log, 3, transplants=Transplants(donors, 1, later=2)).clone()
    batches = _batches(task, mod, target, ms.database.MemoryDatabase(), max_trials=70)
    task.post_tuning()
    assert len(batches[0]) == 3 and batches[0][-1] in keys  # the search's two, a transplant
    assert len(batches[1]) == 2 and set(batches[1]) <= set(keys)  # the next two, alone
    assert not set(batches[1]) & set(batches[0])
    assert len(batches[2]) > 3  # then the first full round, the inner search's
    # no search ran the round of transplants, and the first full round is still the inner's
    searched = [event.split(":")[0] for event in log if event.endswith(":search")]
    assert searched[:2] == ["first", "inner"] and set(searched[2:]) == {"later"}
    assert log.index("first:stop") < log.index("inner:start")
    drawn = [key for batch in batches for key in batch]
    assert len(drawn) == len(set(drawn))


def test_transplants_that_fill_the_quick_round_leave_it_no_search() -> None:
    """Transplants asked for every place of the quick round (``count`` = ``first_trials``)
    take them all where the task has as many: its quick search never starts, the round counts
    as the task's first (the round of transplants and the inner search follow), and a task
    with fewer keeps the search's picks for the places left."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.transplant import Donor, Transplants

    mod, target = _small_matmul(16)
    programs = tm.random_candidates(mod, target, 6, seed=5)
    keys = list(dict.fromkeys(tm.text_of_trace(p.sch.trace) for p in programs))
    assert len(keys) >= 4  # two for the quick round, two for the round after
    donors = [Donor.of(p.sch.trace, mod) for p in programs]
    log: list[str] = []
    task = _logged_rounds(log, 2, transplants=Transplants(donors, 2, later=2)).clone()
    batches = _batches(task, mod, target, ms.database.MemoryDatabase(), max_trials=70)
    task.post_tuning()
    assert len(batches[0]) == 2 and set(batches[0]) <= set(keys)  # transplants alone
    assert len(batches[1]) == 2 and set(batches[1]) <= set(keys)  # the next two
    assert not set(batches[1]) & set(batches[0])
    assert len(batches[2]) > 3  # then the first full round, the inner search's
    assert not [event for event in log if event.startswith("first:")]
    searched = [event.split(":")[0] for event in log if event.endswith(":search")]
    assert searched[0] == "inner" and set(searched[1:]) == {"later"}
    drawn = [key for batch in batches for key in batch]
    assert len(drawn) == len(set(drawn))
    # One transplant to offer: the quick search picks the other place.
    log.clear()
    one = _logged_rounds(log, 2, transplants=Transplants(donors[:1], 2)).clone()
    batches = _batches(one, mod, target, ms.database.MemoryDatabase())
    assert len(batches[0]) == 2 and batches[0][-1] == tm.text_of_trace(programs[0].sch.trace)
    assert log[:2] == ["first:start", "first:search"]


@pytest.mark.parametrize("blocked", [True, False])
def test_the_quick_rounds_best_program_register_blocked_leads_the_round_after_it(
    blocked: bool,
) -> None:
    """With ``register_block`` the round after the quick one is the rewrite of the quick
    round's best program alone (its second pick here), no search running it; the inner search
    follows. Without, the first full round follows the quick one. The run's ``RoundsDue``
    says the task's round after the quick one is to come until it has been measured."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.measure import workload_key
    from tcl.integrations.tvm.quick_grafts import RoundsDue
    from tcl.integrations.tvm.register_block import RegisterBlock

    _, target = _small_matmul()
    mod = matmul_module(32)  # two operands: MetaSchedule's multi-level tiling applies
    log: list[str] = []
    rounds_due = RoundsDue()
    task = _logged_rounds(log, 2, register_block=blocked, rounds_due=rounds_due).clone()
    handed: list[Any] = []
    due: list[bool] = []  # whether the round after the quick one was still to come
    batches = _batches(
        task,
        mod,
        target,
        ms.database.MemoryDatabase(),
        costs=lambda round, n: [2e-3, 1e-3] if round == 0 else [1e-3] * n,
        max_trials=40,
        handed=handed,
        after=lambda: due.append(rounds_due.due(workload_key(mod))),
    )
    task.post_tuning()
    assert len(batches[0]) == 2
    drawn = [key for batch in batches for key in batch]
    assert len(drawn) == len(set(drawn))
    if not blocked:
        assert len(batches[1]) > 3
        assert not any(due)  # no round of its own: a scheduler waits for none
        return
    assert due[:2] == [True, False]  # due from the quick round's end to the rewrite's
    rewrite = RegisterBlock(mod, space_postprocs(mod), lanes=4).of(handed[1].sch.trace)
    assert rewrite is not None and batches[1] == [rewrite[0]]  # x86-64: 4 lanes
    assert len(batches[2]) > 3  # then the first full round, the inner search's
    searched = [event.split(":")[0] for event in log if event.endswith(":search")]
    assert searched[:2] == ["first", "inner"]


def _shared_transplant_rounds(grafts: Any, mod: Any, target: Any, other_cost: float) -> Any:
    """The batches of a task whose transplants ``grafts`` are shared by time against one other
    task, whose best program costs ``other_cost`` s (a quick round of 3, 1 of them a
    transplant; each program measured at 1 ms)."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.tuning.allot import Allotment

    task = tm.workload_key(mod)
    grafts.shares = Allotment({task: 1.0, "other": 1.0}, {task: 1.0, "other": 1.0})
    grafts.shares.measured("other", [other_cost])
    strategy = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(),
        first=ms.search_strategy.ReplayTrace(),
        first_trials=3,
        transplants=grafts,
    ).clone()
    return _batches(strategy, mod, target, ms.database.MemoryDatabase(), max_trials=70)


@pytest.mark.parametrize("other_cost", [1e-9, 1.0])
def test_a_round_of_transplants_shared_by_time_follows_the_time_the_task_holds(
    other_cost: float,
) -> None:
    """Shared by time, a task that holds most of the network's time after the quick round (the
    other task's best program is 1 ns) measures twice its even round of 2; one that holds
    little of it (the other's is 1 s), one. What the round measured is kept apart for the
    cost model's hand-off."""
    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.transplant import Donor, Transplants
    from tcl.tuning.allot import picks_of, root_shares

    mod, target = _small_matmul(16)
    programs = tm.random_candidates(mod, target, 16, seed=5)
    keys = list(dict.fromkeys(tm.text_of_trace(p.sch.trace) for p in programs))
    assert len(keys) >= 6  # one for the quick round, up to five after
    task = tm.workload_key(mod)
    grafts = Transplants([Donor.of(p.sch.trace, mod) for p in programs], 1, later=2)
    batches = _shared_transplant_rounds(grafts, mod, target, other_cost)
    # the quick round measured 1 ms programs: the task's share against the other's best
    share = root_shares({task: 1e-3, "other": other_cost})[task]  # type: ignore[index]
    wanted = picks_of(2, share)
    assert wanted == (4 if other_cost < 1e-3 else 1)
    assert len(batches[1]) == wanted and set(batches[1]) <= set(keys)
    assert not set(batches[1]) & set(batches[0])
    assert list(grafts.apart.values()) == [wanted]  # each ran


@pytest.mark.parametrize(("own", "other_cost"), [(8, 1e-9), (2, 1e-9), (8, 1.0)])
def test_a_round_shared_by_time_grows_only_with_transplants_that_keep_every_decision(
    own: int, other_cost: float
) -> None:
    """``time-exact``: a task that holds most of the time (its share is 4 where the even round
    is 2) takes 4 when as many of its transplants keep every tile decision (its own programs
    as donors), and the even 2 when none is left after the quick round (a larger matmul's
    programs, mended); a task that holds little takes its share, 1, as ``time`` does."""

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.transplant import Donor, Transplants, transplanted

    mod, target = _small_matmul(16)
    big, _ = _small_matmul(32)
    donors = [Donor.of(p.sch.trace, mod) for p in tm.random_candidates(mod, target, own, 5)]
    donors += [Donor.of(p.sch.trace, big) for p in tm.random_candidates(big, target, 8, 7)]
    context = tm.replay_context(mod, target)
    context.generate_design_space()
    replayed = transplanted(mod, list(context.space_generator.postprocs), donors)
    exact = {tm.text_of_trace(t.candidate.sch.trace) for t in replayed if t.kept == 1.0}
    assert len(replayed) - len(exact) >= 3  # mended ones to take where the share is even
    grafts = Transplants(donors, 1, later=2, min_kept=0.0, exact_growth=True)
    batches = _shared_transplant_rounds(grafts, mod, target, other_cost)
    assert set(batches[0]) & exact  # the quick round's transplant: the most kept
    later = len(exact) - 1  # those left for the round after it
    if other_cost > 1e-3:
        assert len(batches[1]) == 1
    elif later >= 4:
        assert len(batches[1]) == 4 and set(batches[1]) <= exact
    else:
        assert len(batches[1]) == 2 and len(set(batches[1]) & exact) == later


def test_a_quick_round_shared_by_time_measures_fewer_of_a_light_task_and_none_more() -> None:
    """``quick_shares`` (``--first-round-allot time``): against one other task, a task of far
    more work or as much measures its quick round of 3, never more, its best transplant beside
    the search's picks; one of far less work measures 1, the search's pick, and its best
    transplant leads the round of transplants instead."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.integrations.tvm.transplant import Donor, Transplants
    from tcl.tuning.allot import Allotment

    mod, target = _small_matmul(16)
    programs = tm.random_candidates(mod, target, 8, seed=5)
    keys = list(dict.fromkeys(tm.text_of_trace(p.sch.trace) for p in programs))
    assert len(keys) >= 3  # a transplant for the quick round and two for the round after
    task = tm.workload_key(mod)

    def rounds(other_work: float) -> list[list[str]]:
        strategy = NewProgramsOnly(
            ms.search_strategy.ReplayTrace(),
            first=ms.search_strategy.ReplayTrace(),
            first_trials=3,
            transplants=Transplants([Donor.of(p.sch.trace, mod) for p in programs], 1, later=2),
            quick_shares=Allotment({task: 1.0, "other": 1.0}, {task: 1.0, "other": other_work}),
        ).clone()
        return _batches(strategy, mod, target, ms.database.MemoryDatabase(), max_trials=70)

    heavy, even, light = rounds(1e-6), rounds(1.0), rounds(1e6)
    for batches in (heavy, even):
        assert len(batches[0]) == 3 and batches[0][-1] in keys
        assert len(batches[1]) == 2 and set(batches[1]) <= set(keys)
        assert not set(batches[1]) & set(batches[0])
    assert len(light[0]) == 1
    assert len(light[1]) == 2 and light[1][0] == heavy[0][-1]  # deferred, not dropped
    assert light[1][1] == heavy[1][0]


def _scored_by_unroll(scored: list[dict[str, float]]) -> Any:
    """A cost model that scores a program by its unroll step (and a hash of its trace among
    equals), above zero; each call's scores by trace key are appended to ``scored``."""
    import zlib

    from tcl.integrations.tvm.build_cost import unroll_step
    from tcl.integrations.tvm.measure import text_of_trace

    def score(candidate: Any) -> float:
        key = text_of_trace(candidate.sch.trace)
        return 1.0 + unroll_step(candidate.sch.trace) + zlib.crc32(key.encode()) / 2**32

    return scored_by_candidate(score, scored)


def test_a_quick_round_bound_by_unroll_measures_the_best_scored_programs_within_it() -> None:
    """``first_round_unroll``: a cost model that scores the programs that unroll furthest best
    has the quick round measure some that unroll by 512; bound to 16, it measures the best-scored
    of those that unroll by at most 16, the best-scored one it passed over right after it, and
    the rounds after those are not bound."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    mod, target = _small_matmul(16)
    for bound in (None, 16):
        scored: list[dict[str, float]] = []
        options = TuneOptions(
            trials=64, first_round=3, first_round_population=64, first_round_unroll=bound
        )  # 64 random programs: more than three that unroll by 512
        batches = _batches(
            Search(options).strategy(16),
            mod,
            target,
            ms.database.MemoryDatabase(),
            _scored_by_unroll(scored),
            max_trials=20,  # the quick round, the program it passed over, a full round
        )
        first = scored[0]  # the quick round's one scoring (no evolution steps)
        steps = {k: int(v) - 1 for k, v in first.items()}
        assert len(batches[0]) == 3 and set(batches[0]) <= set(first)
        if bound is None:
            assert {steps[k] for k in batches[0]} == {512}
            continue
        within = sorted((v for k, v in first.items() if steps[k] <= bound), reverse=True)
        assert max(steps.values()) > bound  # there were programs to leave out
        assert sorted((first[k] for k in batches[0]), reverse=True) == within[:3]
        assert batches[1] == [max((k for k in first if steps[k] > bound), key=first.__getitem__)]
        later = {k: v for call in scored[1:] for k, v in call.items()}
        assert any(int(later[k]) - 1 > bound for k in batches[2])


def test_a_quick_round_bound_by_unroll_grafts_the_best_transplant_within_it() -> None:
    """A transplant that unrolls past the bound does not take a place in the quick round: the
    next best one within it does, and it leads the round of transplants after."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.build_cost import unroll_step
    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.integrations.tvm.transplant import Donor, Transplants

    mod, target = _small_matmul(16)
    programs = tm.random_candidates(mod, target, 32, seed=5)
    far = next(p for p in programs if unroll_step(p.sch.trace) == 512)
    near = next(p for p in programs if unroll_step(p.sch.trace) <= 16)
    far_key, near_key = (tm.text_of_trace(p.sch.trace) for p in (far, near))

    def rounds(bound: int | None) -> list[list[str]]:
        strategy = NewProgramsOnly(
            ms.search_strategy.ReplayTrace(),
            first=ms.search_strategy.ReplayTrace(),
            first_trials=3,
            transplants=Transplants([Donor.of(p.sch.trace, mod) for p in (far, near)], 1, later=2),
            quick_unroll=bound,
        ).clone()
        return _batches(strategy, mod, target, ms.database.MemoryDatabase(), max_trials=70)

    free, bound = rounds(None), rounds(16)
    assert free[0][-1] == far_key and free[1] == [near_key]
    assert bound[0][-1] == near_key and bound[1] == [far_key]


def test_past_its_deadline_a_task_has_its_first_round_and_no_more() -> None:
    import time

    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.deadline import Deadline
    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul()
    deadline = Deadline()
    strategy = NewProgramsOnly(ms.search_strategy.ReplayTrace(), deadline=deadline)
    assert len(_batches(strategy.clone(), mod, target, ms.database.MemoryDatabase())) > 1
    deadline.at = time.time() - 1  # set once, seen by every task's clone
    late = _batches(strategy.clone(), mod, target, ms.database.MemoryDatabase())
    assert len(late) == 1 and late[0]  # the first round, then nothing


def test_only_a_round_after_the_tasks_first_stops_building_at_the_deadline() -> None:
    """Each batch handed out says whether the builder may stop it at the deadline
    (``Deadline.builds_until``): not a task's first round, which every task gets whatever the
    time, and every round after it."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.deadline import Deadline
    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul()
    deadline = Deadline(at=1e12)  # far off: the task has all its rounds
    strategy = NewProgramsOnly(ms.search_strategy.ReplayTrace(), deadline=deadline)
    until: list[float | None] = []

    def batch_costs(round_: int, n: int) -> list[float]:  # called once each batch is out
        until.append(deadline.builds_until())
        return [1e-3] * n

    batches = _batches(strategy, mod, target, ms.database.MemoryDatabase(), costs=batch_costs)
    assert len(batches) > 1 and len(until) == len(batches)
    assert until[0] is None and until[1:] == [1e12] * (len(batches) - 1)
    assert Deadline(at=None, binding=True).builds_until() is None  # no budget: no stop


def test_a_task_whose_space_decides_nothing_stops_searching_once_it_is_measured() -> None:
    """An elementwise add's design space makes no random decision: one program. Once it is
    measured the task is done without searching again (a search of a stock strategy would
    draw the same program, four times, before the task gives up)."""
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    log: list[str] = []

    a = te.placeholder((8, 8), name="A")
    b = te.compute((8, 8), lambda i, j: a[i, j] + 1.0, name="B")
    add = tvm.IRModule({"main": te.create_prim_func([a, b])})
    target = tvm.target.Target({"kind": "llvm", "mcpu": "x86-64", "num-cores": 1})
    counted = NewProgramsOnly(_logged("inner", log))
    batches = _batches(counted, add, target, ms.database.MemoryDatabase())
    assert [len(batch) for batch in batches] == [1] and log.count("inner:search") == 1
    # A space that decides something is searched until it yields nothing new, as before.
    log.clear()
    mod, target = _small_matmul()
    batches = _batches(counted.clone(), mod, target, ms.database.MemoryDatabase())
    assert log.count("inner:search") > len(batches) > 1


def test_a_confident_task_measures_as_far_down_the_order_as_its_rounds_needed() -> None:
    """Each round's best program is at a set place in its order: the next round measures
    twice as far down (at least ``confident``), the first round all of its batch."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    best_at = [0, 1, 2, 0, 0, 0, 0, 0, 0, 0]  # where each round's best program is

    def costs(round_: int, n: int) -> list[float]:
        at = min(best_at[round_], n - 1)
        return [1e-3 if i == at else 2e-3 for i in range(n)]

    mod, target = _small_matmul(256)  # random draws that rarely repeat
    sure = NewProgramsOnly(ms.search_strategy.ReplayTrace(), confident=3)
    batches = _batches(sure, mod, target, ms.database.MemoryDatabase(), None, costs, 160)
    sizes = [len(b) for b in batches]
    # The first round all its batch (16 draws, less repeats); best 1st -> max(3, 2x1); best 2nd
    # -> 2x2; best 3rd -> 2x3; then the most of the last two rounds (3, then 1), then at least 3.
    assert sizes[0] > 6 and sizes[1:6] == [3, 4, 6, 6, 3], sizes
    # A round of programs that all failed says nothing: the next measures the whole batch.
    failed = NewProgramsOnly(ms.search_strategy.ReplayTrace(), confident=1)
    sizes = [
        len(b)
        for b in _batches(
            failed, mod, target, ms.database.MemoryDatabase(), None, lambda r, n: [1e10] * n
        )
    ]
    assert sizes[1] > 2, sizes  # not the 2 a round of the best first would keep


def test_a_confident_round_keeps_its_random_picks_and_a_quick_round_all() -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul(256)
    sure = NewProgramsOnly(ms.search_strategy.ReplayTrace(), confident=1, explore=2)
    batches = _batches(sure, mod, target, ms.database.MemoryDatabase())  # every cost equal
    sizes = [len(b) for b in batches]
    assert sizes[0] > 4 and sizes[1] == 4, sizes  # 2 (twice the 1 needed) + the 2 random
    quick = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(),
        first=ms.search_strategy.ReplayTrace(),
        first_trials=3,
        confident=1,
    )
    sizes = [len(b) for b in _batches(quick, mod, target, ms.database.MemoryDatabase())]
    # The quick round's 3 picks are its own; the first inner round has nothing to go by.
    assert sizes[0] == 3 and sizes[1] > 2 and sizes[2] == 2, sizes


@pytest.mark.parametrize("quick", [False, True])
def test_the_rounds_after_a_task_s_first_full_one_are_the_later_search_s(quick: bool) -> None:
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly

    mod, target = _small_matmul(16)
    log: list[str] = []
    strategy = NewProgramsOnly(
        _logged("inner", log),
        first=_logged("first", log) if quick else None,
        first_trials=2 if quick else 0,
        later=_logged("later", log),
    )
    task = strategy.clone()  # a task's own strategy, as the tuner makes them
    batches = _batches(task, mod, target, ms.database.MemoryDatabase(), max_trials=66)
    task.post_tuning()
    searched = [event.split(":")[0] for event in log if event.endswith(":search")]
    assert searched == ["first"] * quick + ["inner"] + ["later"] * (len(searched) - 1 - quick)
    assert len(batches) >= 3 + quick and len(searched) >= len(batches)  # the last finds none
    # each search is started before it searches and stopped before the next starts
    expected = (["first:start", "first:search", "first:stop"] if quick else []) + [
        "inner:start",
        "inner:search",
        "inner:stop",
        "later:start",
    ]
    assert [e for e in log if not e.startswith("later:search")][: len(expected)] == expected
    assert log[-1] == "later:stop" and log.count("later:start") == 1
    keys = [key for batch in batches for key in batch]
    assert len(keys) == len(set(keys))


@pytest.mark.parametrize("learn", [True, False])
def test_a_resumed_task_s_cost_model_learns_its_stored_runs_before_it_searches(
    learn: bool,
) -> None:
    """Before a resumed task's first search its cost model is updated with the programs the
    database holds that ran on this target, and the task skips its quick round and searches
    with the later strategy from the start; without ``learn_earlier`` both are as in a fresh
    run."""
    import numpy as np
    import tvm
    from tvm.ir.utils import derived_object
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm

    mod, target = _small_matmul(16)
    elsewhere = tvm.target.Target({"kind": "llvm", "mcpu": "znver4", "num-cores": 1})
    database = ms.database.MemoryDatabase()
    workload = database.commit_workload(mod)
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    stored = {}  # trace key -> cost of the runs a resumed task should learn
    for i, candidate in enumerate(tm.random_candidates(mod, target, 6, seed=1)):
        secs = 1e10 if i == 0 else 1e-3 * i  # the first failed (MetaSchedule stores 1e10 s)
        on = elsewhere if i == 1 else target  # the second ran on another machine
        record = ms.database.TuningRecord(candidate.sch.trace, workload, [secs], on, args)
        database.commit_tuning_record(record)
        if i > 1:
            stored[tm.text_of_trace(candidate.sch.trace)] = secs
    updates: list[dict[str, float]] = []

    @derived_object
    class Learner(ms.cost_model.PyCostModel):
        def predict(self, context: Any, candidates: list[Any]) -> np.ndarray:
            return np.zeros(len(candidates))

        def update(self, context: Any, candidates: list[Any], results: list[Any]) -> None:
            assert tm.workload_key(context.mod) == tm.workload_key(mod)
            keys = [tm.text_of_trace(c.sch.trace) for c in candidates]
            updates.append({k: float(r.run_secs[0]) for k, r in zip(keys, results, strict=True)})

        def load(self, path: str) -> None:
            pass

        def save(self, path: str) -> None:
            pass

    log: list[str] = []
    strategy = _logged_rounds(log, learn_earlier=learn)
    batches = _batches(strategy.clone(), mod, target, database, Learner(), max_trials=40)
    searched = [event.split(":")[0] for event in log if event.endswith(":search")]
    if learn:  # the tuner's own updates come from its measure callbacks, not from here
        assert updates == [stored]
        assert set(searched) == {"later"} and len(batches[0]) > 2
    else:
        assert updates == []
        assert searched[:2] == ["first", "inner"] and len(batches[0]) <= 2  # less known ones
    keys = [key for batch in batches for key in batch]
    assert len(keys) == len(set(keys)) and not set(keys) & set(stored)


def test_a_quick_round_s_batch_alone_is_marked_for_the_runner_s_quick_timing() -> None:
    """``quick_timing``: a task's strategy (a clone) marks the batch of its quick round for the
    runner's quick timing as it hands it out, and none after it."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.integrations.tvm.sync_runner import QuickTiming

    timing = QuickTiming(2)
    marked: list[bool] = []

    def costs(_: int, n: int) -> list[float]:  # when the runner measures the batch
        marked.append(timing.now)
        return [1e-3] * n

    mod, target = _small_matmul(16)  # a space of more than 19 programs
    strategy = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(),
        first=ms.search_strategy.ReplayTrace(),
        first_trials=3,
        quick_timing=timing,
    )
    task = strategy.clone()  # each task's own, sharing the run's quick timing
    database = ms.database.MemoryDatabase()
    batches = _batches(task, mod, target, database, costs=costs, max_trials=19)
    assert len(batches[0]) == 3 and len(batches) > 1  # the quick round, then full ones
    assert marked == [True] + [False] * (len(batches) - 1)


def test_a_full_round_measures_the_other_tasks_bests_in_place_of_its_lowest_scored() -> None:
    """``share_best``: the tasks' strategies (clones) share the run's bests; a task's full
    round hands out the other task's best replayed on it last, in place of the search's last
    pick (a round as large as before), and a quick round none."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.search import NewProgramsOnly
    from tcl.integrations.tvm.siblings import RunBests
    from tcl.integrations.tvm.transplant import transplanted

    def costs(_: int, n: int) -> list[float]:  # each round's first pick is its fastest
        return [1e-3 * (i + 1) for i in range(n)]

    shared = RunBests(2)
    strategy = NewProgramsOnly(ms.search_strategy.ReplayTrace(), share_best=shared)
    donor_mod, target = _small_matmul(256)  # random draws that rarely repeat
    donor_batches = _batches(
        strategy.clone(), donor_mod, target, ms.database.MemoryDatabase(), costs=costs
    )
    best_secs, version, donor = shared.best[tm.workload_key(donor_mod)]
    assert (best_secs, version) == (1e-3, 1) and len(donor_batches[0]) > 8
    mod, _ = _small_matmul(128)
    context = tm.replay_context(mod, target)
    context.generate_design_space()
    [graft] = transplanted(mod, list(context.space_generator.postprocs), [donor])
    key = tm.text_of_trace(graft.candidate.sch.trace)
    batches = _batches(strategy.clone(), mod, target, ms.database.MemoryDatabase())
    alone = NewProgramsOnly(ms.search_strategy.ReplayTrace())
    unshared = _batches(alone, mod, target, ms.database.MemoryDatabase())
    assert batches[0] == [*unshared[0][:-1], key]  # the search's picks but its last, then it
    assert sum(key in batch for batch in batches) == 1  # offered once
    assert tm.workload_key(mod) in shared.best  # and this task's best is shared in turn
    quick = NewProgramsOnly(
        ms.search_strategy.ReplayTrace(),
        first=ms.search_strategy.ReplayTrace(),
        first_trials=3,
        share_best=shared,
    )
    first = _batches(quick.clone(), mod, target, ms.database.MemoryDatabase())
    assert len(first[0]) == 3 and key not in first[0] and first[1][-1] == key
