"""tcl.tuning.options and the report that saves them: one set of tuning options, checked when
made, saved whole, and read back from reports written before they were saved whole."""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest

from tcl.tuning.options import DEFAULT_COST_MODELS, TuneOptions, default_cost_model
from tcl.tuning.report import TuneReport


def test_options_are_checked_when_made() -> None:
    with pytest.raises(ValueError, match="unknown cost model 'gbdt'"):
        TuneOptions(cost_model="gbdt")
    with pytest.raises(ValueError, match="trials must be at least 1"):
        TuneOptions(trials=0)
    with pytest.raises(ValueError, match="explore must be 0 or more"):
        TuneOptions(explore=-1)
    with pytest.raises(ValueError, match="first_round must be 0 or more"):
        TuneOptions(first_round=-2)
    with pytest.raises(ValueError, match="first_round_population must be at least 1"):
        TuneOptions(first_round=2, first_round_population=0)
    with pytest.raises(ValueError, match="first_round_iters must be 0 or more"):
        TuneOptions(first_round=2, first_round_iters=-1)
    with pytest.raises(ValueError, match="post_opt must be 0 or more"):
        TuneOptions(post_opt=-1)
    with pytest.raises(ValueError, match="transplants must be 0 or more"):
        TuneOptions(transplants=-1)
    with pytest.raises(ValueError, match=r"transplants \(3\) take the place .*first_round is 2"):
        TuneOptions(first_round=2, transplants=3)
    assert TuneOptions(first_round=2, transplants=2).transplants == 2  # the whole quick round
    with pytest.raises(ValueError, match=r"transplants \(1\) .*first_round is 0"):
        TuneOptions(transplants=1)
    with pytest.raises(ValueError, match="transplant_round must be 0 or more"):
        TuneOptions(first_round=2, transplant_round=-1)
    with pytest.raises(ValueError, match=r"transplant_round \(3\) follows the quick first round"):
        TuneOptions(transplant_round=3)
    with pytest.raises(ValueError, match="register_block rewrites the quick first round's best"):
        TuneOptions(register_block=True)
    with pytest.raises(ValueError, match="unknown allot 'weight'"):
        TuneOptions(first_round=2, transplant_round=3, transplant_allot="weight")
    with pytest.raises(ValueError, match=r"unknown allot 'time-exact': choose one of even, time$"):
        TuneOptions(allot="time-exact")  # a round's picks have no transplants to keep
    with pytest.raises(ValueError, match=r"first_round_allot \('time'\) shares the quick first"):
        TuneOptions(first_round_allot="time")
    with pytest.raises(ValueError, match="unknown allot 'time-exact'"):
        TuneOptions(first_round=2, first_round_allot="time-exact")
    with pytest.raises(ValueError, match=r"first_round_unroll \(64\) bounds the quick first"):
        TuneOptions(first_round_unroll=64)
    with pytest.raises(ValueError, match="first_round_unroll must be 0 or more, got -1"):
        TuneOptions(first_round=2, first_round_unroll=-1)
    with pytest.raises(ValueError, match=r"first_round_repeats \(2\) times the quick first"):
        TuneOptions(first_round_repeats=2)
    with pytest.raises(ValueError, match="first_round_repeats must be 0 or more, got -1"):
        TuneOptions(first_round=2, first_round_repeats=-1)
    with pytest.raises(ValueError, match=r"post_opt \(64\) must leave the search some"):
        TuneOptions(trials=64, post_opt=64)
    with pytest.raises(
        ValueError, match=r"a first-round model is for tcl\+xgb, tcl-then-xgb, tcl-then-xgb-prior"
    ):
        TuneOptions(cost_model="xgb", first_round_model="v1.pt")
    with pytest.raises(ValueError, match="hand_off must be 0 or more"):
        TuneOptions(hand_off=-1)
    with pytest.raises(ValueError, match="--hand-off is for tcl-then-xgb, tcl-then-xgb-prior"):
        TuneOptions(cost_model="tcl+xgb", hand_off=2)
    with pytest.raises(ValueError, match="per_round must be 0 or more"):
        TuneOptions(per_round=-1)
    with pytest.raises(ValueError, match="candidate_opt_level is one of LLVM's levels 0-3, got 4"):
        TuneOptions(candidate_opt_level=4)
    assert TuneOptions(candidate_opt_level=0).candidate_opt_level == 0
    with pytest.raises(ValueError, match="repeat_ms must be at least 1, got 0"):
        TuneOptions(repeat_ms=0)
    with pytest.raises(ValueError, match="repeat_ms sets the warm repeats' length"):
        TuneOptions(repeat_ms=5, cold_cache=True)
    with pytest.raises(ValueError, match="first_round_opt_level is one of LLVM's levels 0-3"):
        TuneOptions(first_round=2, first_round_opt_level=-1)
    with pytest.raises(ValueError, match=r"first_round_opt_level \(1\) builds the quick first"):
        TuneOptions(first_round_opt_level=1)
    with pytest.raises(ValueError, match="share_best must be 0 or more, got -1"):
        TuneOptions(share_best=-1)
    with pytest.raises(TypeError, match="populaton"):
        TuneOptions(populaton=8)  # type: ignore[call-arg]


def test_a_run_names_its_devices_default_cost_model() -> None:
    # The default is the device's: the pre-fitted XGB is packaged for a CPU's programs only.
    unnamed = TuneOptions(trials=8)
    assert unnamed.cost_model is None
    cpu, cuda = unnamed.on_device("cpu"), unnamed.on_device("cuda")
    assert (cpu.cost_model, cuda.cost_model) == ("tcl-then-xgb-prior", "tcl-then-xgb")
    assert cpu == TuneOptions(trials=8, cost_model="tcl-then-xgb-prior")
    assert unnamed.cost_model_on("cuda") == "tcl-then-xgb" and cpu.cost_model_on("cuda") == (
        "tcl-then-xgb-prior"
    )
    assert set(DEFAULT_COST_MODELS) == {"cpu", "cuda"}
    # A cost model the user named stays, whatever the device.
    named = TuneOptions(trials=8, cost_model="xgb")
    assert named.on_device("cuda") is named and named.on_device("cpu").cost_model == "xgb"
    with pytest.raises(ValueError, match="no default cost model for device 'npu'"):
        unnamed.on_device("npu")
    # Every default takes a first-round model, so an unnamed one does too.
    staged = TuneOptions(first_round_model="v1.pt")
    assert staged.on_device("cuda").first_round_model == "v1.pt"


def test_saved_options_round_trip_through_json() -> None:
    options = TuneOptions(trials=64, population=24, rpc=("127.0.0.1", 9190, "rk3588"), cc="g++")
    saved = json.loads(json.dumps(options.saved()))
    assert {f.name for f in fields(TuneOptions)} == set(saved)
    # A run names its layout (on_target); a report written before that tuned as imported.
    assert options.conv_layout is None
    assert TuneOptions.from_saved(saved) == replace(options, conv_layout="NCHW")
    ran = TuneOptions.from_saved(saved).on_target({"kind": "llvm", "mcpu": "skylake-avx512"})
    assert TuneOptions.from_saved(json.loads(json.dumps(ran.saved()))) == ran
    # An option added after a report was written takes its default.
    assert TuneOptions.from_saved({"trials": 8}) == TuneOptions(trials=8, conv_layout="NCHW")


def test_a_run_names_its_targets_convolution_layout() -> None:
    unnamed = TuneOptions(trials=8)
    avx512 = {"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 1}
    assert unnamed.on_target(avx512) == TuneOptions(trials=8, conv_layout="NCHW16c")
    for other in (
        {"kind": "llvm", "mcpu": "core-avx2", "num-cores": 1},
        {"kind": "llvm", "mcpu": "x86-64"},
        {"tag": "nvidia/nvidia-a100", "host": {"kind": "llvm"}},
    ):
        assert unnamed.on_target(other).conv_layout == "NCHW"
    # A network without a 2-D convolution is built as imported wherever it runs.
    assert unnamed.on_target(avx512, convolutions=False).conv_layout == "NCHW"
    # A layout the user named stays, NCHW (as imported) too.
    for named in ("NCHW", "NHWC", "NCHW8c"):
        options = TuneOptions(trials=8, conv_layout=named)
        assert options.on_target(avx512) is options
        assert options.on_target(avx512, convolutions=False) is options


def test_reports_read_back_old_and_new() -> None:
    figures = {
        "network": "net",
        "platform": "cpu-x86-64-1t",
        "tasks": 4,
        "tune_seconds": 9.0,
        "latency_ms": 1.0,
        "untuned_ms": 3.0,
        "torch_ms": 2.0,
        "max_abs_error": 0.0,
    }
    ran = TuneOptions(trials=16, explore=1).on_device("cpu")
    new = TuneReport(**figures, options=ran.saved())
    again = TuneReport.from_json(json.loads(json.dumps(new.__dict__)))
    assert again == new and again.trials == 16 and again.explore == 1
    assert again.cost_model == default_cost_model("cpu") and again.fast_math
    # Written before the options were saved whole: some beside the figures, exact math then.
    old = TuneReport.from_json({**figures, "cost_model": "xgb", "trials": 32, "population": 64})
    assert (old.cost_model, old.trials, old.population) == ("xgb", 32, 64)
    assert not old.fast_math and not old.weight_prepack
    fast = TuneReport.from_json({**figures, "cost_model": "xgb", "trials": 32, "fast_math": True})
    assert fast.fast_math
    assert "32 trials over 4 tasks with the xgb cost model" in old.lines()[0]
    one = TuneReport(**{**figures, "tasks": 1}, threads=1, options=TuneOptions(trials=1).saved())
    assert "1 trial over 1 task " in one.lines()[0] and "1 thread:" in one.lines()[1]


def test_a_time_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="minutes must be above 0"):
        TuneOptions(minutes=0)
    assert TuneOptions(minutes=0.5).minutes == 0.5
    # Under a time budget the time decides; the trials only bound it, from the CLI and tcl.tune.
    assert TuneOptions.of(minutes=0.5).trials == 1024 and TuneOptions.of().trials == 200
    assert TuneOptions.of(trials=64, minutes=0.5).trials == 64


def test_a_time_budget_starts_with_a_quick_round_unless_told() -> None:
    from tcl.tuning.options import TIMED_FIRST_ROUND

    assert TIMED_FIRST_ROUND == 2
    assert TuneOptions.of(minutes=3).first_round == TIMED_FIRST_ROUND
    assert TuneOptions.of(trials=64, minutes=3).first_round == TIMED_FIRST_ROUND
    # a counted run, or one told otherwise, keeps what it says
    assert TuneOptions.of().first_round == 0 and TuneOptions.of(trials=512).first_round == 0
    assert TuneOptions.of(minutes=3, first_round=0).first_round == 0
    assert TuneOptions.of(minutes=3, first_round=4).first_round == 4
    assert TuneOptions.of(first_round=None).first_round == 0  # the CLI's "not given"
    # the dataclass itself is the options exactly as given (what the benchmarks name)
    assert TuneOptions(minutes=3).first_round == 0


def test_a_quick_round_is_shared_evenly_unless_told() -> None:
    assert TuneOptions.of(minutes=3).first_round_allot == "even"
    assert TuneOptions.of(minutes=3, first_round_allot="time").first_round_allot == "time"
    assert TuneOptions.of(first_round=2, first_round_allot="time").first_round_allot == "time"
    assert TuneOptions.of(first_round=2, first_round_allot=None).first_round_allot == "even"


def test_a_time_budgets_quick_round_picks_programs_within_its_unroll_bound_unless_told() -> None:
    from tcl.tuning.options import TIMED_FIRST_ROUND_UNROLL

    assert TuneOptions.of(minutes=3).first_round_unroll == TIMED_FIRST_ROUND_UNROLL
    assert TuneOptions.of(minutes=3, first_round_unroll=16).first_round_unroll == 16
    assert TuneOptions.of(minutes=3, first_round=0).first_round_unroll is None  # no quick round
    assert TuneOptions.of(first_round=2).first_round_unroll is None  # a counted run's
    assert TuneOptions.of(minutes=3, first_round_unroll="any").first_round_unroll is None
    assert TuneOptions.of(first_round=2, first_round_unroll=0).first_round_unroll == 0
    assert TuneOptions.of(first_round=2, first_round_unroll=None).first_round_unroll is None


def test_a_time_budget_searches_the_later_rounds_narrower_unless_told() -> None:
    from tcl.tuning.options import DEFAULT_POPULATION, TIMED_LATER_POPULATION

    assert TIMED_LATER_POPULATION == 64 < DEFAULT_POPULATION
    assert TuneOptions.of(minutes=3).narrower_later_rounds == TIMED_LATER_POPULATION
    assert TuneOptions.of().later_population == 0 and TuneOptions.of().narrower_later_rounds is None
    assert TuneOptions.of(minutes=3, later_population=0).narrower_later_rounds is None
    assert TuneOptions.of(minutes=3, later_population=32).later_population == 32
    assert TuneOptions.of(later_population=None).later_population == 0  # the CLI's "not given"
    assert TuneOptions(minutes=3).later_population == 0


def test_a_time_budget_shares_the_runs_best_programs_unless_told() -> None:
    from tcl.tuning.options import TIMED_SHARE_BEST

    assert TIMED_SHARE_BEST == 2
    assert TuneOptions.of(minutes=3).share_best == TIMED_SHARE_BEST
    assert TuneOptions.of().share_best == 0 and TuneOptions(minutes=3).share_best == 0
    assert TuneOptions.of(minutes=3, share_best=0).share_best == 0
    assert TuneOptions.of(share_best=None).share_best == 0  # the CLI's "not given"
    assert TuneOptions.of(share_best=4).share_best == 4


def test_a_time_budget_register_blocks_the_quick_rounds_best_unless_told() -> None:
    from tcl.tuning.options import TIMED_REGISTER_BLOCK

    assert TIMED_REGISTER_BLOCK is True
    assert TuneOptions.of(minutes=3).register_block is True
    assert TuneOptions.of().register_block is False  # counted runs: no quick round
    assert TuneOptions.of(minutes=3, first_round=0).register_block is False
    assert TuneOptions.of(minutes=3, register_block=False).register_block is False
    assert TuneOptions.of(register_block=None).register_block is False  # the CLI's "not given"


def test_a_time_budget_gives_the_rounds_of_transplants_first_unless_told() -> None:
    from tcl.tuning.allot import DEFAULT_TASK_SCHEDULER
    from tcl.tuning.options import TIMED_TASK_SCHEDULER

    assert (DEFAULT_TASK_SCHEDULER, TIMED_TASK_SCHEDULER) == ("gradient", "per-second")
    assert TuneOptions.of(minutes=3).task_scheduler == "per-second"
    assert TuneOptions.of().task_scheduler == "gradient"  # counted runs: no quick round
    assert TuneOptions.of(minutes=3, first_round=0).task_scheduler == "gradient"
    assert TuneOptions.of(minutes=3, task_scheduler="programs").task_scheduler == "programs"
    assert TuneOptions.of(task_scheduler=None).task_scheduler == "gradient"  # CLI: "not given"
    assert TuneOptions().task_scheduler == "gradient"  # the fields' own default, as benchmarks
    assert TuneOptions.of(first_round=2, register_block=True).register_block is True
    # a GPU's programs are not register-blocked, and its report says so
    assert TuneOptions.of(minutes=3).on_device("cuda").register_block is False
    assert TuneOptions.of(minutes=3).on_device("cpu").register_block is True


def test_the_report_says_when_the_estimate_passed_pytorch() -> None:
    curve = [
        {"trial": 12, "seconds": 30.0, "estimated_ms": 1.5},
        {"trial": 24, "seconds": 41.0, "estimated_ms": 0.9},
        {"trial": 36, "seconds": 55.0, "estimated_ms": 0.7},
    ]
    figures = {"network": "net", "platform": "p", "tasks": 12, "tune_seconds": 60.0}
    timings = {"latency_ms": 0.8, "untuned_ms": 9.0, "torch_ms": 1.0, "max_abs_error": 0.0}
    options = TuneOptions(trials=1024, minutes=1).saved()
    report = TuneReport(**figures, **timings, curve=curve, options=options, measured=36)
    assert report.passed_torch() == curve[1]
    lines = report.lines()
    assert (
        lines[0].startswith("net on p: 36 trials over 12 tasks") and "1-minute budget" in lines[0]
    )
    assert "passed PyTorch eager's after 41 s of tuning (24 trials" in lines[-1]
    never = TuneReport(**figures, **{**timings, "torch_ms": 0.5}, curve=curve, options=options)
    assert never.passed_torch() is None and "passed" not in never.lines()[-1]
    staged = TuneOptions(trials=1024, first_round=2, first_round_model="runs/v1.pt").saved()
    first = TuneReport(**figures, **timings, options=staged).lines()[0]
    assert ", first round of 2 ranked by v1.pt" in first and "other tasks" not in first
    grafted = TuneOptions(trials=1024, first_round=2, transplants=1).saved()
    grafted_line = TuneReport(**figures, **timings, options=grafted).lines()[0]
    assert ", first round of 2 (1 from other tasks' best programs)" in grafted_line
    assert "then a round" not in grafted_line and "light" not in grafted_line
    light = TuneOptions(trials=1024, first_round=2, transplants=1, first_round_allot="time")
    light_line = TuneReport(**figures, **timings, options=light.saved()).lines()[0]
    assert ", first round of 2 (fewer for light tasks; 1 from other tasks' best" in light_line
    bound = TuneOptions(trials=1024, first_round=2, transplants=1, first_round_unroll=64)
    bound_line = TuneReport(**figures, **timings, options=bound.saved()).lines()[0]
    assert ", first round of 2 (unrolled by at most 64 steps; 1 from other tasks' best" in (
        bound_line
    )
    assert "unrolled" not in grafted_line
    more = TuneOptions(trials=1024, first_round=2, transplants=1, transplant_round=3).saved()
    more_line = TuneReport(**figures, **timings, options=more).lines()[0]
    assert "(1 from other tasks' best programs), then a round of 3 more of theirs" in more_line
    assert "shared by time" not in more_line
    filled = TuneOptions(trials=1024, first_round=2, transplants=2).saved()
    filled_line = TuneReport(**figures, **timings, options=filled).lines()[0]
    assert ", first round of 2 (other tasks' best programs where a task has as many)" in (
        filled_line
    )
    shared = TuneOptions(**{**more, "transplant_allot": "time"}).saved()
    shared_line = TuneReport(**figures, **timings, options=shared).lines()[0]
    assert "then a round of 3 more of theirs a task, shared by time" in shared_line
    assert "every tile decision" not in shared_line
    exact = TuneOptions(**{**more, "transplant_allot": "time-exact"}).saved()
    exact_line = TuneReport(**figures, **timings, options=exact).lines()[0]
    assert "a task, shared by time, more only of those that keep every tile" in exact_line
    only = TuneOptions(trials=1024, first_round=2, transplant_round=2).saved()
    only_line = TuneReport(**figures, **timings, options=only).lines()[0]
    assert ", first round of 2, then a round of 2 of other tasks' best" in only_line
    assert "rounds of" not in first
    small = TuneReport(**figures, **timings, options=TuneOptions(per_round=4).saved()).lines()[0]
    assert ", rounds of 4 programs a task" in small and "evolution" not in small
    fewer = TuneOptions(minutes=1, later_population=64, later_iters=1).saved()
    fewer_line = TuneReport(**figures, **timings, options=fewer).lines()[0]
    assert ", later rounds' population 64 and 1 evolution step" in fewer_line
    iters = TuneReport(**figures, **timings, options=TuneOptions(later_iters=2).saved())
    assert ", later rounds' 2 evolution steps" in iters.lines()[0]


def test_the_report_counts_the_tasks_left_to_dlight() -> None:
    figures = {"network": "net", "platform": "cuda", "tasks": 12, "tune_seconds": 60.0}
    timings = {"latency_ms": 0.2, "untuned_ms": 0.25, "torch_ms": 0.7, "max_abs_error": 0.0}
    gpu = TuneReport(**figures, **timings, dlight_tasks=5)
    assert "5 of 12 tasks run TVM's untuned (dlight) kernel" in "\n".join(gpu.lines())
    assert TuneReport.from_json(json.loads(json.dumps(gpu.__dict__))).dlight_tasks == 5
    cpu = TuneReport(**figures, **timings)
    assert cpu.dlight_tasks == 0 and "dlight" not in "\n".join(cpu.lines())
    assert TuneReport.from_json({**figures, **timings}).dlight_tasks == 0  # written before it
