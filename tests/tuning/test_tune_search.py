"""The search of tcl tune (tcl.tuning.tune_search): each task's strategy and measurement protocol
from the options, and a search's rounds of the size asked for."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tcl.tuning import platforms

pytestmark = pytest.mark.tvm


def test_every_task_searches_with_the_population_asked_for() -> None:
    from tcl.tuning.options import DEFAULT_POPULATION, TuneOptions
    from tcl.tuning.tune_search import Search

    def population(options: TuneOptions) -> int:
        return int(Search(options).strategy(8).inner.population_size)

    assert population(TuneOptions(trials=64)) == DEFAULT_POPULATION
    assert population(TuneOptions(trials=64, population=24)) == 24


def test_a_quick_first_round_searches_narrower_and_measures_fewer() -> None:
    from tcl.tuning.allot import Allotment
    from tcl.tuning.options import FIRST_ROUND_ITERS, FIRST_ROUND_POPULATION, TuneOptions
    from tcl.tuning.tune_search import Search, trials_per_round

    plain = Search(TuneOptions(trials=64)).strategy(8)
    assert plain.first is None
    quick = Search(TuneOptions(trials=64, first_round=2)).strategy(8)
    assert quick.first_trials == 2 and quick.inner.population_size == 128
    assert quick.first.population_size == FIRST_ROUND_POPULATION
    assert quick.first.init_min_unmeasured == FIRST_ROUND_POPULATION  # draws exactly that many
    assert quick.first.genetic_num_iters == FIRST_ROUND_ITERS and quick.inner.genetic_num_iters == 4
    options = TuneOptions(trials=64, first_round=2, first_round_iters=2)
    assert Search(options).strategy(8).first.genetic_num_iters == 2
    options = TuneOptions(trials=64, first_round=2, first_round_population=96)
    assert Search(options).strategy(8).first.population_size == 96
    options = TuneOptions(trials=64, population=64, first_round=2, first_round_population=96)
    narrowed = Search(options).strategy(8).first
    # no wider than the rounds
    assert narrowed.population_size == narrowed.init_min_unmeasured == 64
    # A network of many tasks has rounds as small as a quick round (2 programs a task from 86
    # tasks on, of a time budget's 1,024 trials): its first round is still a quick one, whose
    # search draws random programs where a full round's evolves a population of 128.
    per_round = trials_per_round(1024, 134)  # DenseNet-121's 134 tasks
    assert per_round == 2
    as_small = Search(TuneOptions(trials=1024, first_round=2)).strategy(per_round)
    assert as_small.first is not None and as_small.first_trials == 2
    assert as_small.first.population_size == FIRST_ROUND_POPULATION
    shares = Allotment({"a": 1.0}, {"a": 1.0})
    assert (
        Search(TuneOptions(trials=64, first_round=2)).strategy(8, quick_shares=shares).quick_shares
        is shares
    )
    assert Search(TuneOptions(trials=64)).strategy(8, quick_shares=shares).quick_shares is None
    bound = TuneOptions(trials=64, first_round=2, first_round_unroll=64)
    assert Search(bound).strategy(8).quick_unroll == 64
    assert quick.quick_unroll is None


def test_the_quick_rounds_unroll_bound_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    timed = ["tune", "resnet50", "--minutes", "2"]
    assert tune_options(parse(timed)).first_round_unroll == 64
    assert tune_options(parse(["tune", "resnet50"])).first_round_unroll is None
    assert tune_options(parse([*timed, "--first-round-unroll", "64"])).first_round_unroll == 64
    assert tune_options(parse([*timed, "--first-round-unroll", "any"])).first_round_unroll is None
    with pytest.raises(SystemExit):
        parse([*timed, "--first-round-unroll", "lots"])
    assert "expected a whole number of 0 or more, or any, got 'lots'" in capsys.readouterr().err


def test_a_quick_round_is_timed_as_the_rounds_unless_told_its_own_repeats() -> None:
    """``--first-round-repeats N``: a quick round is timed in N repeats; by default (0), or
    without a quick round, the runner times every batch as the rounds."""
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    timed = ["tune", "resnet50", "--minutes", "2"]
    assert Search(tune_options(parse(timed))).quick_timing() is None
    search = Search(tune_options(parse([*timed, "--first-round-repeats", "2"])))
    timing = search.quick_timing()
    assert timing is not None and timing.repeats == 2
    assert search.strategy(8, quick_timing=timing).quick_timing is timing
    with pytest.raises(ValueError, match="times the quick first round: ask for one"):
        tune_options(parse(["tune", "resnet50", "--first-round-repeats", "2"]))  # none
    assert Search(TuneOptions(trials=64)).strategy(8, quick_timing=timing).quick_timing is None


def test_a_quick_round_is_built_at_its_own_opt_level_where_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--first-round-opt-level N``: the quick round's batches are marked for the builder's
    level N and timed as the rounds (0 repeats of its own); without a quick round it is
    refused, and so is a level past LLVM's 3."""
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    timed = ["tune", "resnet50", "--minutes", "2"]
    timing = Search(tune_options(parse([*timed, "--first-round-opt-level", "1"]))).quick_timing()
    assert timing is not None and (timing.opt_level, timing.repeats) == (1, 0)
    both = [*timed, "--first-round-opt-level", "0", "--first-round-repeats", "2"]
    timing = Search(tune_options(parse(both))).quick_timing()
    assert timing is not None and (timing.opt_level, timing.repeats) == (0, 2)
    with pytest.raises(ValueError, match="builds the quick first round: ask for one"):
        tune_options(parse(["tune", "resnet50", "--first-round-opt-level", "1"]))
    with pytest.raises(SystemExit):
        parse([*timed, "--first-round-opt-level", "4"])
    assert "invalid choice: 4" in capsys.readouterr().err


def test_the_candidates_opt_level_reaches_the_builder_from_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--candidate-opt-level N`` is the level the run's measurement workers build at; by
    default none is asked (the target's own), and a level past LLVM's 3 is refused."""
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning import collect, platforms
    from tcl.tuning.tune_search import Search

    asked: list[int | None] = []
    monkeypatch.setattr(
        collect,
        "start_measurement_workers",
        lambda tm, protocol, threads, rpc, opt_level: asked.append(opt_level),
    )
    parse = build_parser().parse_args
    platform = platforms.get("cpu-x86-64-1t")
    Search(tune_options(parse(["tune", "resnet50", "--candidate-opt-level", "1"]))).start_workers(
        platform
    )
    Search(tune_options(parse(["tune", "resnet50"]))).start_workers(platform)
    assert asked == [1, None]
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--candidate-opt-level", "4"])
    assert "invalid choice: 4" in capsys.readouterr().err


def test_the_task_scheduler_comes_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """MetaSchedule's gradient scheduler by default (by name), ``--task-scheduler programs``
    the one that counts rounds by their programs, for the run's rounds; under ``--minutes``
    the one that gives the rounds of transplants first, then weighs the gradient by what a
    task's programs cost, unless told."""
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.allot import PROGRAMS_FLOOR
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    assert Search(tune_options(parse(["tune", "resnet50"]))).task_scheduler(8) == "gradient"
    asked = Search(tune_options(parse(["tune", "resnet50", "--task-scheduler", "programs"])))
    assert asked.options.task_scheduler == "programs"
    assert asked.task_scheduler(8).per_round == 8
    timed = Search(tune_options(parse(["tune", "resnet50", "--minutes", "3"]))).task_scheduler(8)
    assert timed.per_second and not timed.by_batches and timed.least == PROGRAMS_FLOOR
    told = ["tune", "resnet50", "--minutes", "3", "--task-scheduler", "gradient"]
    assert Search(tune_options(parse(told))).task_scheduler(8) == "gradient"
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--task-scheduler", "round-robin"])
    assert "invalid choice: 'round-robin'" in capsys.readouterr().err


def test_confident_reaches_every_tasks_strategy_from_the_command_line() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    options = tune_options(parse(["tune", "resnet50", "--confident", "2", "--explore", "1"]))
    strategy = Search(options).strategy(8)
    assert (strategy.confident, strategy.explore) == (2, 1)
    assert Search(tune_options(parse(["tune", "resnet50"]))).strategy(8).confidence is None
    quick = Search(tune_options(parse(["tune", "resnet50", "--minutes", "2", "--confident", "3"])))
    assert quick.strategy(8).first is not None and quick.strategy(8).confident == 3


def test_share_best_reaches_the_search_from_the_command_line() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    strategy = Search(tune_options(parse(["tune", "resnet50", "--share-best", "2"]))).strategy(8)
    assert strategy.share_best is not None and strategy.share_best.count == 2
    assert not strategy.share_best.best  # the run's, empty until its tasks measure
    assert Search(tune_options(parse(["tune", "resnet50"]))).strategy(8).share_best is None
    timed = Search(tune_options(parse(["tune", "resnet50", "--minutes", "1"]))).strategy(8)
    assert timed.share_best is not None and timed.share_best.count == 2  # a time budget's
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--share-best", "-1"])


def test_transplants_reach_the_quick_round_from_the_command_line(tmp_path: Path) -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.integrations.tvm.transplant import Donor, save_donors
    from tcl.tuning.options import TIMED_FIRST_ROUND, TIMED_TRANSPLANT_ROUND
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    timed = ["tune", "resnet50", "--minutes", "2"]
    search = Search(tune_options(parse([*timed, "--transplants", "1"])))
    transplants = search.transplants("cpu")  # the packaged donors
    assert transplants is not None and transplants.count == 1 and len(transplants.donors) > 1000
    assert search.strategy(8, transplants=transplants).transplants is transplants
    assert search.transplants("cuda") is None  # no GPU donors are packaged
    # A time budget's quick round is its transplants unless told; a counted run has none.
    default = tune_options(parse(timed))
    assert default.transplants == TIMED_FIRST_ROUND and Search(default).transplants("cpu")
    assert Search(tune_options(parse([*timed, "--transplants", "0"]))).transplants("cpu") is None
    assert tune_options(parse(["tune", "resnet50"])).transplants == 0
    assert tune_options(parse([*timed, "--first-round", "3"])).transplants == 3  # all of it
    assert tune_options(parse([*timed, "--first-round", "0"])).transplants == 0  # no round
    # A donor file of the user's own, for any device; a counted run has no quick round for them.
    path = tmp_path / "donors.json.gz"
    save_donors(path, [Donor([[], []], {"C": ("8",)})], {"from": "test"})
    own = Search(tune_options(parse([*timed, "--transplants", "1", "--donors", str(path)])))
    assert [d.extents for d in own.transplants("cuda").donors] == [{"C": ("8",)}]
    counted = Search(tune_options(parse(["tune", "resnet50", "--first-round", "0"])))
    assert counted.strategy(8, transplants=transplants).transplants is None
    # A round of the next transplants after the quick one, with or without some in it.
    more = Search(tune_options(parse([*timed, "--transplant-round", "3"]))).transplants("cpu")
    assert more is not None and (more.count, more.later) == (TIMED_FIRST_ROUND, 3)
    only = [*timed, "--transplants", "0", "--transplant-round", "2"]
    alone = Search(tune_options(parse(only))).transplants("cpu")
    assert alone is not None and (alone.count, alone.later) == (0, 2)
    assert default.transplant_round == TIMED_TRANSPLANT_ROUND
    assert transplants.later == TIMED_TRANSPLANT_ROUND
    no_grafts = [*timed, "--transplants", "0"]
    assert tune_options(parse(no_grafts)).transplant_round == 0  # none without transplants
    assert tune_options(parse(["tune", "resnet50", "--first-round", "2"])).transplant_round == 0
    # The round shared by the time each task holds (the run's Transplants.shares).
    assert default.transplant_allot == "even"
    by_time = tune_options(parse([*timed, "--transplant-allot", "time"]))
    assert by_time.transplant_allot == "time" and by_time.transplant_round == TIMED_TRANSPLANT_ROUND
    exact = [*timed, "--transplant-allot", "time-exact"]
    assert tune_options(parse(exact)).transplant_allot == "time-exact"
    # The quick round shared by time (the strategy's quick_shares), where asked for.
    assert default.first_round_allot == "even"
    light = tune_options(parse([*timed, "--first-round-allot", "time"]))
    assert light.first_round_allot == "time" and light.first_round == TIMED_FIRST_ROUND
    counted = ["tune", "resnet50", "--first-round", "2", "--first-round-allot", "time"]
    assert tune_options(parse(counted)).first_round_allot == "time"


def test_later_population_reaches_every_tasks_strategy_from_the_command_line() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.options import TIMED_LATER_POPULATION, TuneOptions
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    options = tune_options(parse(["tune", "resnet50", "--later-population", "64"]))
    strategy = Search(options).strategy(8)
    assert (strategy.inner.population_size, strategy.later.population_size) == (128, 64)
    assert Search(tune_options(parse(["tune", "resnet50"]))).strategy(8).later is None
    # under a time budget the later rounds search with TIMED_LATER_POPULATION unless told
    timed = Search(tune_options(parse(["tune", "resnet50", "--minutes", "2"]))).strategy(8)
    assert timed.later.population_size == TIMED_LATER_POPULATION < timed.inner.population_size
    wide = tune_options(parse(["tune", "resnet50", "--minutes", "2", "--later-population", "0"]))
    assert Search(wide).strategy(8).later is None
    # the rounds' own population is no later one
    assert Search(TuneOptions(population=64, later_population=64)).strategy(8).later is None
    assert TuneOptions(population=64, later_population=64).narrower_later_rounds is None
    quick = Search(
        tune_options(parse(["tune", "resnet50", "--minutes", "2", "--later-population", "32"]))
    )
    assert quick.strategy(8).first is not None and quick.strategy(8).later.population_size == 32
    with pytest.raises(ValueError, match="later_population must be 0 or more"):
        TuneOptions(later_population=-1)


def test_later_iters_set_the_evolution_steps_of_every_tasks_later_rounds() -> None:
    from tcl.tuning.options import LATER_ROUND_ITERS, TIMED_LATER_POPULATION, TuneOptions
    from tcl.tuning.tune_search import Search

    # fewer evolution steps alone make a later strategy, at the rounds' own population
    strategy = Search(TuneOptions(later_iters=2)).strategy(8)
    assert strategy.later.genetic_num_iters == 2 and strategy.inner.genetic_num_iters == 4
    assert strategy.later.population_size == strategy.inner.population_size == 128
    timed = TuneOptions.of(minutes=2, later_iters=1)
    later = Search(timed).strategy(8).later
    assert (later.population_size, later.genetic_num_iters) == (TIMED_LATER_POPULATION, 1)
    plain = Search(TuneOptions.of(minutes=2)).strategy(8)
    assert plain.later.genetic_num_iters == LATER_ROUND_ITERS == plain.inner.genetic_num_iters
    assert Search(TuneOptions(later_iters=LATER_ROUND_ITERS)).strategy(8).later is None
    with pytest.raises(ValueError, match="later_iters must be 0 or more"):
        TuneOptions(later_iters=-1)


def test_learn_earlier_reaches_every_tasks_strategy_from_the_command_line() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options
    from tcl.tuning.tune_search import Search

    parse = build_parser().parse_args
    forgets = Search(tune_options(parse(["tune", "resnet50"]))).strategy(8)
    learns = Search(tune_options(parse(["tune", "resnet50", "--learn-earlier"]))).strategy(8)
    assert learns.learn_earlier and not forgets.learn_earlier  # test_search checks the clones


@pytest.mark.parametrize("per_round", [1, 2, 8, 9, 15, 16])
def test_explore_draws_that_many_picks_of_a_round_at_random(per_round: int) -> None:
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    def random_picks(explore: int) -> int:
        search = Search(TuneOptions(trials=64, explore=explore))
        eps = float(search.strategy(per_round).inner.eps_greedy)
        return int(per_round * eps)  # MetaSchedule's PickWithEpsGreedy

    assert random_picks(0) == 0  # MetaSchedule's 5% of a round of at most 16
    assert random_picks(1) == 1
    assert random_picks(3) == min(3, per_round)
    assert random_picks(100) == per_round


def test_cold_cache_times_single_runs_after_flushing_the_caches() -> None:
    from tcl.tuning.collect import MeasureProtocol
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    cpu = platforms.get("cpu-native-1t")
    warm = Search(TuneOptions()).protocol(cpu)
    cold = Search(TuneOptions(cold_cache=True)).protocol(cpu)
    assert not warm.cpu_cache_flush and warm.min_repeat_ms == 20
    assert warm.build_workers == cold.build_workers == MeasureProtocol.of(cpu).build_workers
    # One run per repeat: a repeat that looped for min_repeat_ms would flush before the first
    # run only and time the rest warm.
    assert cold.cpu_cache_flush and cold.min_repeat_ms == 0 and cold.number == 1


def test_repeat_ms_sets_how_long_each_warm_repeat_runs() -> None:
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    cpu = platforms.get("cpu-native-1t")
    brief = Search(TuneOptions(repeat_ms=5)).protocol(cpu)
    assert brief.min_repeat_ms == 5 and brief.repeat == 3 and not brief.cpu_cache_flush
    assert Search(TuneOptions()).protocol(cpu).min_repeat_ms == 20


def test_a_search_measures_the_programs_per_round_asked_for(tmp_path: Path) -> None:
    """``TuneOptions(per_round=K)`` (``tcl tune --per-round K``): each round measures K programs
    of a task, whatever the trials would give (bench_first_round.py measures one round of K this
    way), and with
    ``allot="time"`` each task its share of K, in a first round by its weight x FLOPs
    (``tcl.tuning.allot``)."""
    from tcl.tuning.allot import allotment
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search, trials_per_round
    from tcl.tuning.user_models import load_model
    from tcl.zoo.extract import export_program, extracted_tasks, import_program

    platform = platforms.get("cpu-x86-64-1t")
    user = load_model("bert_tiny", tiny=True)
    mod = import_program(export_program(user.module, user.inputs))
    extracted = extracted_tasks(mod, platform.tvm_target())
    allotted = allotment(extracted, "time")
    assert allotted is not None
    asked = {key: allotted.picks(key, 3) for key in allotted.weights}
    assert max(asked.values()) > 3 and min(asked.values()) < 3  # the round is shared unevenly
    assert trials_per_round(3 * len(extracted), len(extracted)) != 3  # the default differs
    options = TuneOptions(
        trials=sum(asked.values()) + 3 * len(extracted),  # the first round and about one more
        cost_model="random",
        population=16,
        allot="time",
        per_round=3,
        progress=False,
    )
    Search(options).run(extracted, tmp_path, platform)
    # MetaSchedule's database file is in measurement order: the first round is the first
    # batch of each task (a tiny task's space may hold fewer programs than asked for).
    with open(tmp_path / "database_workload.json") as f:
        keys = [str(json.loads(line)[0]) for line in f]
    with open(tmp_path / "database_tuning_record.json") as f:
        records = [(keys[r[0]], r[1][1]) for r in map(json.loads, f)]  # run_secs second
    # Replayed in order, each batch is the task's share when it was drawn: in the first round
    # by its FLOPs, after it by the time it held (weight x best so far). The scheduler may
    # pick a task twice in a row, and the file then holds its two batches as one run: a run
    # longer than the task's share is split at it.
    first: list[tuple[str, int]] = []
    later = later_batches = 0
    for key, group in itertools.groupby(records, lambda r: r[0]):
        run = list(group)
        while run:
            picks = allotted.picks(key, 3)
            batch, run = run[:picks], run[picks:]
            if key not in {k for k, _ in first}:
                first.append((key, len(batch)))
            else:
                later_batches += 1
                later += len(batch) == picks
            allotted.measured(key, [sum(secs) / len(secs) for _, secs in batch if secs])
    assert len(first) == len(extracted)
    assert all(n <= asked[key] for key, n in first)
    assert sum(n == asked[key] for key, n in first) >= len(first) // 2
    assert any(n > 3 for _, n in first)  # a heavy task got more than the even share
    assert later_batches > 0 and later >= later_batches // 2


def test_a_time_budgets_bar_counts_its_seconds_and_a_counted_runs_its_trials() -> None:
    from tcl.integrations.tvm.deadline import Deadline
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    deadline = Deadline()
    bar, clock = Search(TuneOptions.of(minutes=1.5)).progress_bar(deadline)
    assert bar.total == 90 and bar.unit == "s" and clock == deadline.elapsed
    bar.close()
    bar, clock = Search(TuneOptions.of(trials=64)).progress_bar(deadline)
    assert bar.total == 64 and bar.unit == "trial" and clock is None
    bar.close()


def test_a_run_in_a_blocked_layout_ranks_with_the_packaged_model_of_that_layout() -> None:
    import torch

    from tcl import model as models
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    def weights(layout: str | None, model_path: str | None = None) -> dict[str, torch.Tensor]:
        options = TuneOptions(trials=64, conv_layout=layout, model_path=model_path)
        made = Search(options)._cost_model("cpu", 8, None)
        return dict(made.prior.net.state_dict())

    def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
        return all(torch.equal(v, b[k]) for k, v in a.items())

    blocked = str(models.base_model_path("cpu", "NCHW16c"))
    base = str(models.base_model_path("cpu"))
    packaged_blocked = models.load(blocked)[0].state_dict()
    assert same(weights("NCHW16c"), packaged_blocked)
    assert not same(weights(None), packaged_blocked)
    assert same(weights("NCHW8c"), models.load(base)[0].state_dict())
    assert same(weights("NCHW16c", base), models.load(base)[0].state_dict())  # a model given wins


def test_a_run_in_a_blocked_layout_takes_the_blocked_donors_too() -> None:
    from tcl.integrations.tvm.transplant import packaged_donors
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune_search import Search

    def donors(layout: str | None) -> int:
        options = TuneOptions(trials=64, first_round=2, transplants=1, conv_layout=layout)
        made = Search(options).transplants("cpu")
        assert made is not None
        return len(made.donors)

    assert donors("NCHW16c") == len(packaged_donors("cpu", "NCHW16c")) > donors(None)
    assert donors("NCHW8c") == donors(None) == len(packaged_donors("cpu"))
