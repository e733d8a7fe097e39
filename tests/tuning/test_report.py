"""A run's report says when the built network does not compute what the model does."""

from __future__ import annotations

import json

import numpy as np

from tcl.tuning.output_check import OutputCheck
from tcl.tuning.report import TuneReport

from conftest import checked_report

FIGURES = {"network": "net", "platform": "p", "tasks": 3, "tune_seconds": 9.0}
TIMINGS = {"latency_ms": 1.0, "untuned_ms": 3.0, "torch_ms": 2.0}


def test_the_report_blames_tvm_when_the_untuned_build_is_wrong_too() -> None:
    ref = np.ones(4)
    right = checked_report(OutputCheck.of(ref + 1e-6, ref, ref))
    assert right.output_warning() is None and "warning" not in "\n".join(right.lines())
    both = checked_report(OutputCheck.of(ref * 9, ref, ref * 7))
    assert "neither is the untuned build's" in both.output_warning()  # type: ignore[operator]
    assert "TVM imports or compiles this network wrongly" in both.lines()[-1]
    tuned_only = checked_report(OutputCheck.of(ref * 9, ref, ref))
    assert "a tuned kernel computes something else" in tuned_only.output_warning()  # type: ignore[operator]
    assert "though the untuned build's is" in tuned_only.output_warning()  # type: ignore[operator]
    # A model without PyTorch is checked against the untuned build.
    onnx = checked_report(OutputCheck.of(ref * 9, ref), torch_ms=None)
    assert "not the untuned build's" in onnx.output_warning()  # type: ignore[operator]
    # Read back from its JSON, the report says the same.
    again = TuneReport.from_json(json.loads(json.dumps(both.__dict__)))
    assert again.output_warning() == both.output_warning()


def test_a_report_written_before_the_check_is_not_judged() -> None:
    old = TuneReport.from_json({**FIGURES, **TIMINGS, "max_abs_error": 5.0})
    assert old.output_scale is None and old.output_warning() is None


def test_the_report_says_when_the_untuned_build_was_timed_in_one_process() -> None:
    samples = {"tuned": [1.0, 1.1, 0.9], "torch": [2.0, 2.1, 1.9]}
    once = TuneReport.from_json(
        {
            **FIGURES,
            **TIMINGS,
            "max_abs_error": 0.0,
            "samples_ms": {**samples, "untuned": [30_000.0]},
        }
    )
    lines = once.lines()
    assert "of 3 fresh processes" in lines[1]
    assert lines[3].startswith("  untuned        30000.000 ms [30000.000-30000.000]")
    assert lines[3].endswith("(over 10 s a run: timed in one process)")
    every = TuneReport.from_json(
        {
            **FIGURES,
            **TIMINGS,
            "max_abs_error": 0.0,
            "samples_ms": {**samples, "untuned": [3.0, 3.1, 2.9]},
        }
    )
    assert "one process" not in "\n".join(every.lines())
    remote = TuneReport.from_json(
        {**FIGURES, **TIMINGS, "max_abs_error": 0.0, "samples_ms": samples, "builds_timed_on": "d"}
    )
    assert "of 3 interleaved rounds; builds on d" in remote.lines()[1]


def test_a_build_slower_than_pytorch_is_told_how_to_tune_on() -> None:
    ref = np.ones(4)
    right, wrong = OutputCheck.of(ref, ref, ref), OutputCheck.of(ref * 9, ref, ref)
    behind = checked_report(right, latency_ms=38.13, torch_ms=29.74)
    hint = behind.behind_torch()
    assert hint is not None and hint in behind.lines()
    assert "(29.740 against 38.130 ms)" in hint and "resumes this run" in hint
    assert "(--trials N: N more)" in hint  # a run of a trial count goes on by trials
    timed = checked_report(right, latency_ms=38.13, torch_ms=29.74, options={"minutes": 1.0})
    assert "(--minutes M: M more minutes)" in timed.behind_torch()  # type: ignore[operator]
    # Kernels estimated below PyTorch's latency: the rest of the network is what is behind.
    curve = [{"trial": 40.0, "seconds": 9.0, "estimated_ms": 2.207}]
    outside = checked_report(right, latency_ms=3.464, torch_ms=2.903, curve=curve).behind_torch()
    assert outside is not None and "estimate is below PyTorch's (2.207 ms)" in outside
    assert "about 1.257 ms of the network is outside them" in outside and "resumes" not in outside
    above = [{"trial": 40.0, "seconds": 9.0, "estimated_ms": 37.922}]
    assert (
        "resumes this run"
        in checked_report(right, latency_ms=38.13, torch_ms=29.74, curve=above).behind_torch()
    )  # type: ignore[operator]
    # Faster than PyTorch, without PyTorch, or computing something else: nothing to tune on for.
    assert checked_report(right, latency_ms=1.0, torch_ms=2.0).behind_torch() is None
    assert checked_report(right, latency_ms=3.0, torch_ms=None).behind_torch() is None
    assert checked_report(wrong, latency_ms=3.0, torch_ms=2.0).behind_torch() is None
    assert not any("PyTorch eager is faster" in line for line in checked_report(wrong).lines())


def test_a_resumed_run_says_its_earlier_programs_had_passed_pytorch() -> None:
    ref = np.ones(4)
    check = OutputCheck.of(ref, ref, ref)
    earlier = {"trial": 44.0, "seconds": 0.0, "estimated_ms": 0.617}  # the runs it resumed
    resumed = checked_report(check, latency_ms=0.6, torch_ms=0.699, curve=[earlier]).lines()
    assert any("with the work directory's earlier programs (44 trials" in line for line in resumed)
    fresh = {"trial": 22.0, "seconds": 6.2, "estimated_ms": 0.617}
    lines = checked_report(check, latency_ms=0.6, torch_ms=0.699, curve=[fresh]).lines()
    assert any("passed PyTorch eager's after 6 s of tuning (22 trials;" in line for line in lines)


def header(**options: object) -> str:
    """The first line of a report of a run with ``options``."""
    saved = {**FIGURES, **TIMINGS, "max_abs_error": 0.0, "options": options}
    return TuneReport.from_json(saved).lines()[0]


def test_the_header_says_when_rounds_were_counted_by_their_programs() -> None:
    assert ", rounds counted by their programs" in header(task_scheduler="programs")
    floor = header(task_scheduler="programs-floor")
    assert ", rounds counted by their programs (at least 4 a task)" in floor
    assert "counted by" not in header(task_scheduler="gradient") and "counted" not in header()
    first = ", every task's round of transplants before any full round"
    assert first in header(task_scheduler="transplants-first") and first not in header()
    per_second = header(task_scheduler="per-second")
    assert first + ", then the most expected gain a second" in per_second
    assert "a second" not in header(task_scheduler="transplants-first")


def test_the_header_says_how_long_each_repeat_ran() -> None:
    assert ", repeats of at least 5 ms" in header(repeat_ms=5)
    assert "repeats of" not in header()


def test_the_header_says_at_which_level_a_quick_round_was_built() -> None:
    quick = {"first_round": 2, "transplants": 2}
    built = header(**quick, first_round_opt_level=1)
    said = "first round of 2 (other tasks' best programs where a task has as many; built at"
    assert f"{said} LLVM level 1)" in built
    assert "LLVM level" not in header(**quick)


def test_the_header_says_how_many_other_tasks_bests_a_round_measured() -> None:
    assert ", 2 of the other tasks' best programs a round" in header(share_best=2)
    assert "other tasks' best" not in header()
