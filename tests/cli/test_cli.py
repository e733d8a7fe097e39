"""The tcl command line: records stats/convert, quickstart, and error reporting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tcl
from tcl.cli import main
from tcl.records import sample_data_path


def test_records_stats_text_and_json(ansor_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "stats", str(ansor_dir)]) == 0
    text = capsys.readouterr().out
    assert "records      53 (53 measured, 0 failed) from 5 file(s)" in text
    assert "skipped      none" in text and "records/s" in text
    assert main(["records", "stats", str(ansor_dir), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 53 and summary["tasks"] == 53 and len(summary["targets"]) == 4
    assert sum(summary["steps"]["histogram"].values()) == 53


def test_records_stats_lenient_reports_skips(
    tmp_path: Path, ansor_lines: list[bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "log.json"
    path.write_bytes(ansor_lines[0] + b"\n" + ansor_lines[1][:40] + b"\n")
    assert main(["records", "stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: invalid_json" in err
    assert main(["records", "stats", str(path), "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "skipped      invalid_json: 1" in out and f"{path}:2" in out


def test_records_convert(
    ansor_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rs.tcl"
    assert main(["records", "convert", str(ansor_dir), "-o", str(out)]) == 0
    assert "wrote 53 records" in capsys.readouterr().out
    assert len(tcl.RecordSet.load(out)) == 53


def test_quickstart_tunes_with_the_base_model(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    args = ["quickstart", "--tiny", "--trials", "24", "--work-dir", str(tmp_path / "work")]
    assert main([*args, "--json", str(report)]) == 0
    captured = capfd.readouterr()  # file descriptors: what TVM's C++ code prints counts too
    out = captured.out
    assert "record core read 96 bundled MetaSchedule records" in out
    assert "base_model.pt" in out and "PyTorch eager" in out and "3 fresh processes" in out
    assert f"MetaSchedule's and TVM's logs: {tmp_path / 'work' / 'logs'}" in out
    # MetaSchedule's INFO log and task tables, and TVM's C++ warnings, went to the work
    # directory, not the terminal: twelve or thirteen lines are tcl's own (and a warning or
    # two where other processes keep the machine busy).
    assert "Logging directory" not in out + captured.err
    assert "Warning" not in out + captured.err
    lines = (out + captured.err).splitlines()
    assert len([ln for ln in lines if not ln.startswith("warning: ")]) <= 13, lines
    assert any((tmp_path / "work" / "logs").glob("*task_scheduler.log"))
    assert (tmp_path / "work" / "logs" / "tvm_native.log").is_file()
    data = json.loads(report.read_text())
    assert data["options"]["cost_model"] == "tcl-then-xgb-prior" and data["latency_ms"] > 0
    assert data["max_abs_error"] < 1e-3  # the tuned module computes what PyTorch does
    assert len(data["curve"]) >= 1 and data["options"]["exact_math"] is False
    assert data["options"]["first_round"] == 2  # a time budget: a quick first round
    # Both builds timed in each of the quickstart's 3 fresh processes, PyTorch in one of its
    # own beside each; medians are headlines.
    assert {k: len(v) for k, v in data["samples_ms"].items()} == {
        "tuned": 3,
        "untuned": 3,
        "torch": 3,
    }
    assert data["options"]["rounds"] == 3
    assert data["torch_ms"] == pytest.approx(float(np.median(data["samples_ms"]["torch"])))
    assert data["machine_load"]["other_cores"] >= 0 and data["threads"] == 2


def test_a_time_budget_on_the_command_line_starts_with_a_quick_round() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    def first_round(*argv: str) -> int:
        return tune_options(build_parser().parse_args(list(argv))).first_round

    assert first_round("tune", "resnet50", "--minutes", "3") == 2
    assert first_round("tune", "resnet50", "--minutes", "3", "--first-round", "0") == 0
    assert first_round("tune", "resnet50", "--trials", "1024") == 0
    assert first_round("tune", "resnet50", "--trials", "1024", "--first-round", "4") == 4
    assert first_round("quickstart") == 2 and first_round("quickstart", "--first-round", "1") == 1


def test_a_first_round_model_reaches_the_options_and_is_checked() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    options = tune_options(parse(["tune", "resnet50", "--first-round-model", "v1.pt"]))
    assert options.first_round_model == "v1.pt" and options.model_path is None
    assert tune_options(parse(["tune", "resnet50"])).first_round_model is None
    with pytest.raises(ValueError, match="a first-round model is for"):
        tune_options(parse(["tune", "resnet50", "--cost-model", "xgb", "--first-round-model", "a"]))


def test_a_hand_off_point_reaches_the_options_and_is_checked() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    assert tune_options(parse(["tune", "resnet50", "--hand-off", "2"])).hand_off == 2
    assert tune_options(parse(["tune", "resnet50"])).hand_off == 0
    with pytest.raises(ValueError, match="--hand-off is for"):
        tune_options(parse(["tune", "resnet50", "--cost-model", "xgb", "--hand-off", "2"]))


def test_a_convolution_layout_reaches_the_options_and_is_checked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    assert tune_options(parse(["tune", "resnet50", "--conv-layout", "NHWC"])).conv_layout == "NHWC"
    blocked = parse(["tune", "resnet50", "--conv-layout", "NCHW16c"])
    assert tune_options(blocked).conv_layout == "NCHW16c"
    assert tune_options(parse(["tune", "resnet50", "--conv-layout", "NCHW"])).conv_layout == "NCHW"
    assert tune_options(parse(["tune", "resnet50"])).conv_layout is None  # the platform's
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--conv-layout", "NCHW4c"])
    assert "invalid choice: 'NCHW4c'" in capsys.readouterr().err


def test_the_programs_per_round_reach_the_options_and_are_checked() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    assert tune_options(parse(["tune", "resnet50", "--per-round", "4"])).per_round == 4
    assert tune_options(parse(["tune", "resnet50", "--minutes", "5"])).per_round == 0
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--per-round", "-1"])


def test_the_repeats_length_reaches_the_options_and_is_checked() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    parse = build_parser().parse_args
    assert tune_options(parse(["tune", "resnet50", "--repeat-ms", "5"])).repeat_ms == 5
    assert tune_options(parse(["tune", "resnet50"])).repeat_ms is None
    with pytest.raises(SystemExit):
        parse(["tune", "resnet50", "--repeat-ms", "0"])


def test_the_timing_processes_default_to_five_and_three_for_the_quickstart() -> None:
    from tcl.cli import build_parser
    from tcl.cli.tune import tune_options

    def rounds(*argv: str) -> int:
        return tune_options(build_parser().parse_args(list(argv))).rounds

    assert rounds("tune", "resnet50") == 5 and rounds("quickstart") == 3
    assert rounds("tune", "resnet50", "--timing-processes", "2") == 2
    assert rounds("quickstart", "--timing-processes", "5") == 5


def test_tune_help_lists_its_options_by_group(capsys: pytest.CaptureFixture[str]) -> None:
    from tcl.cli import build_parser

    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["tune", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    titles = [
        "the model:",
        "where it is tuned:",
        "budget and cost model:",
        "rounds and measurements:",
        "the quick first round and transplants:",
        "the library:",
        "outputs:",
    ]
    where = [text.index(f"\n{title}\n") for title in titles]
    assert where == sorted(where)  # the groups in the order a user decides them
    ends = [*where[1:], len(text)]
    sections = {t: text[a:b] for t, a, b in zip(titles, where, ends, strict=True)}
    # only --help and --quiet, which every command takes, stay outside the groups
    ungrouped = text[text.index("\noptions:\n") : where[0]]
    listed = [line.split()[0] for line in ungrouped.splitlines() if line.startswith("  -")]
    assert listed == ["-h,", "-q,"], listed
    assert "--minutes" in sections["budget and cost model:"]
    assert "--cold-cache" in sections["rounds and measurements:"]
    assert "--transplants" in sections["the quick first round and transplants:"]
    assert "--platform" in sections["where it is tuned:"] and "--cc" in sections["the library:"]


def test_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "stats", str(tmp_path / "nope.json")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["tune", "--network", "nosuchnet"], "unknown network 'nosuchnet'"),
        (["tune", "--network", "bert_tiny", "--platform", "cpu-z80"], "unknown platform 'cpu-z80'"),
        (["tune", "--network", "bert_tiny", "--trials", "0"], "must be at least 1, got 0"),
        (["tune", "--network", "bert_tiny", "--trials", "-3"], "must be at least 1, got -3"),
        (
            "tune --network bert_tiny --trials 8 --post-opt 8",
            "post_opt (8) must leave the search some of the 8 trials",
        ),
        (["quickstart", "--trials", "many"], "expected a whole number, got 'many'"),
        (
            ["collect", "--network", "resnet18,typo", "--platform", "cpu-x86-64-1t", "--out", "o"],
            "unknown network 'typo'",
        ),
        (
            "collect --network resnet18 --platform cpu-x86-64-1t --out o --programs-per-task 0",
            "must be at least 1",
        ),
        (["train", "r", "--out", "m.pt", "--steps", "0"], "must be at least 1, got 0"),
        (["sample", "p", "-o", "s.jsonl", "--fraction", "1.5"], "must be in (0, 1], got 1.5"),
        (
            "active --network resnet18 --platform cpu-x86-64-1t --out o --budget 0",
            "must be in (0, 1]",
        ),
        (["zoo", "tasks", "nosuchnet"], "unknown network 'nosuchnet'"),
        (["tune", "bert_tiny", "--input-shape", "1,a"], "'1,a' is not a shape"),
        (["tune", "bert_tiny", "--input-shape", "0,8"], "'0,8' is not a shape"),
        (["tune", "bert_tiny", "--dtype", "float33"], "'float33' is not a dtype"),
        (["tune", "nope.onnx"], "no such file: nope.onnx"),
    ],
)
def test_command_line_errors_are_one_line_before_any_work(
    argv: list[str] | str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv.split() if isinstance(argv, str) else argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tcl: error: ") and message in lines[0], lines


def test_network_names_are_checked_against_the_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sample database, with a collection manifest saying which network each task is from.
    records = tmp_path / "records"
    records.mkdir()
    for name in ("database_tuning_record.json", "database_workload.json"):
        (records / name).write_bytes((sample_data_path() / name).read_bytes())
    keys = tcl.read_records(records).tasks.workload_key
    tasks = {key: {"networks": {["net_a", "net_b"][t % 2]: 1}} for t, key in enumerate(keys)}
    (records / "manifest.json").write_text(json.dumps({"tasks": tasks}))
    out = tmp_path / "m.pt"
    from tcl.model import base_model_path

    base = str(base_model_path())
    for argv, option in (
        (["train", str(records), "--out", str(out), "--holdout", "net_a,nosuchnet"], "--holdout"),
        (["eval", base, str(records), "--networks", "nosuchnet"], "--networks"),
        (
            ["distill", "--base", base, "--target", str(records), "-o", str(out), "--holdout", "x"],
            "--holdout",
        ),
    ):
        assert main(argv) == 2
        captured = capsys.readouterr()
        lines = captured.err.splitlines()
        assert len(lines) == 1 and f"{option}: no records of " in lines[0], lines
        assert lines[0].endswith("networks here: net_a, net_b") and not out.exists()
    assert main(["eval", base, str(records), "--networks", "net_b", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result["per_network"]) == ["net_b"] and 0 < result["top1"] <= 1


def test_distill_refuses_a_pick_with_nothing_to_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 32 programs a task: a 3% pick is one a task, which no ranking loss can learn from (a
    # search-drawn store of 8 programs a task is in the same place at the default 10%).
    from tcl.model import base_model_path

    out = tmp_path / "m.pt"
    argv = ["distill", "--base", str(base_model_path()), "--target", str(sample_data_path())]
    assert main([*argv, "-o", str(out), "--fraction", "0.03", "-q"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tcl: error: {sample_data_path()}: "), lines
    assert "--fraction 0.03 " in lines[0] and "at most 32" in lines[0] and not out.exists()


def test_a_moved_model_names_its_machine_and_tune_warns_on_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dataclasses import replace

    from tcl.cli.tune import _warn_if_moved_elsewhere
    from tcl.model import base_model_path, moved_to
    from tcl.tuning import platforms

    # The sample database as a collection of another machine: its manifest names the platform.
    here = platforms.get("cpu-native-1t")
    there = replace(here, host=replace(here.host, cpu_model="Some Other CPU"))
    assert there.id != here.id
    store = tmp_path / "store"
    store.mkdir()
    for name in ("database_tuning_record.json", "database_workload.json"):
        (store / name).write_bytes((sample_data_path() / name).read_bytes())
    (store / "manifest.json").write_text(json.dumps({"platform": there.to_dict()}))
    out = tmp_path / "moved.pt"
    argv = ["distill", "--base", str(base_model_path()), "--target", str(store), "-o", str(out)]
    assert main([*argv, "--fraction", "0.5", "--steps", "3", "-q"]) == 0
    assert moved_to(out) == [{"name": "cpu-native-1t", "id": there.id, "machine": "Some Other CPU"}]
    # A move goes on from the moved checkpoint (and from its chain) with the earlier machines.
    again = tmp_path / "again.pt"
    assert main([*argv[:2], str(out), *argv[3:-1], str(again), "--steps", "3", "-q"]) == 0
    assert [m["id"] for m in moved_to(again)] == [there.id, there.id]
    assert moved_to(base_model_path()) == []
    capsys.readouterr()

    _warn_if_moved_elsewhere([str(out), None, str(base_model_path())], here)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: {out} was moved by tcl distill to the programs of ")
    assert f"cpu-native-1t-{there.id} (Some Other CPU)" in lines[0] and here.id in lines[0]
    _warn_if_moved_elsewhere([str(out), str(tmp_path / "missing.pt")], there)
    assert capsys.readouterr().out == ""


def test_unwritable_outputs_are_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file_in_the_way = tmp_path / "f"
    file_in_the_way.write_text("")
    blocked = file_in_the_way / "below"  # no directory can be made under a file, even by root
    for argv in (
        ["train", "r", "--out", str(blocked / "m.pt")],
        ["tune", "--network", "bert_tiny", "--work-dir", str(blocked / "w")],
        ["records", "convert", "x.json", "-o", str(blocked / "rs.tcl")],
        ["distill", "--base", "m.pt", "--target", "d", "-o", str(blocked / "m.pt")],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("tcl: error: ") and "not writable" in err and err.count("\n") == 1
    assert main(["tune", "--network", "bert_tiny", "--work-dir", str(file_in_the_way)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["train", "r", "--out", str(tmp_path)]) == 2
    assert "is a directory, not a file" in capsys.readouterr().err


def test_closed_stdout_ends_quietly() -> None:
    # `tcl records stats ... | head -1` where head has already exited: every write fails (EPIPE).
    cmd = [sys.executable, "-m", "tcl.cli", "records", "stats", str(sample_data_path())]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = subprocess.run(cmd, stdout=write_end, stderr=subprocess.PIPE, text=True, check=False)
    finally:
        os.close(write_end)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "BrokenPipe" not in run.stderr and run.stderr == "", run.stderr


def test_every_command_takes_quiet() -> None:
    import argparse

    from tcl.cli import build_parser

    def leaves(parser: argparse.ArgumentParser, path: list[str]) -> list[list[str]]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            return [path]
        return [
            p for a in subs for name, sub in a.choices.items() for p in leaves(sub, [*path, name])
        ]

    commands = leaves(build_parser(), [])
    assert ["train"] in commands and ["records", "stats"] in commands and len(commands) >= 14
    for command in commands:
        parser = build_parser()
        for name in command:  # down to the command's own parser
            action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = action.choices[name]
        assert any("--quiet" in a.option_strings for a in parser._actions), command


def test_tune_exits_1_when_the_built_network_computes_something_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tcl.tuning import tune
    from tcl.tuning.report import OutputCheck, TuneReport

    from conftest import checked_report

    reference = np.ones(8)
    checks = {
        "right": OutputCheck.of(reference + 1e-7, reference, reference),
        "wrong": OutputCheck.of(reference * 3, reference, reference * 3),
    }

    def tuned(model, platform, work, options, *, check: OutputCheck) -> TuneReport:
        Path(work).mkdir()  # as a run makes it
        return checked_report(  # type: ignore[no-any-return]
            check, network=model.name, library=str(Path(work) / "net.so"), options=options.saved()
        )

    for name, check in checks.items():
        monkeypatch.setattr(tune, "tune_model", lambda *a, check=check: tuned(*a, check=check))
        argv = ["tune", "--network", "bert_tiny", "--tiny", "--trials", "8", "--quiet"]
        status = main([*argv, "--work-dir", str(tmp_path / name)])
        out = capsys.readouterr().out
        assert (status, "do not deploy" in out) == ((0, False) if name == "right" else (1, True))
        saved = json.loads((tmp_path / name / "report.json").read_text())
        assert saved["output_scale"] == 1.0 and saved["untuned_max_abs_error"] >= 0.0
