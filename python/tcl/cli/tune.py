"""``tcl tune`` and ``tcl quickstart``: a zoo network tuned with MetaSchedule and a cost model,
measured against its untuned build and PyTorch eager."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tcl._format import counted
from tcl.cli.args import network_name, output_dir, platform_name, positive_float, positive_int, rpc
from tcl.cli.tune_args import (
    QUICKSTART_TIMING_PROCESSES,
    add_first_round,
    add_outputs,
    add_tune_options,
)

if TYPE_CHECKING:
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.platforms import Platform
    from tcl.tuning.tune import TuneReport

# What `tcl quickstart` spends: a minute of tuning (a time budget, so each task's first round is
# a quick one of TuneOptions' TIMED_FIRST_ROUND programs and the network has a tuned latency
# within seconds: bench/README.md).
QUICKSTART_MINUTES = 1.0


def add_commands(commands: Any) -> None:
    from tcl.tuning.platforms import DEFAULT_PLATFORM

    tune = commands.add_parser(
        "tune", help="tune a model with MetaSchedule and write a deployable library"
    )
    add_tune_options(tune)
    tune.set_defaults(func=run_tune)

    quickstart = commands.add_parser(
        "quickstart", help="tune a network on this CPU with the packaged base model"
    )
    quickstart.add_argument("--network", default="bert_tiny", type=network_name)
    quickstart.add_argument("--platform", default=DEFAULT_PLATFORM, type=platform_name)
    quickstart.add_argument(
        "--minutes",
        type=positive_float,
        default=QUICKSTART_MINUTES,
        help=f"the tuning's time budget (default {QUICKSTART_MINUTES:g})",
    )
    quickstart.add_argument(
        "--trials", type=positive_int, help="at most this many programs (default 1,024)"
    )
    add_first_round(quickstart)
    quickstart.add_argument("--work-dir", default="tcl-quickstart", type=output_dir)
    add_outputs(quickstart)
    quickstart.set_defaults(func=run_quickstart, rounds=QUICKSTART_TIMING_PROCESSES)


def tune_options(args: argparse.Namespace) -> TuneOptions:
    """The run's options from the command line: every :class:`TuneOptions` field the command
    has an argument for (the same name), and the RPC device."""
    from tcl.tuning.options import TuneOptions

    names = {f.name for f in fields(TuneOptions)} - {"rpc"}
    given_options = {k: v for k, v in vars(args).items() if k in names and v is not None}
    return TuneOptions.of(**given_options, rpc=rpc(args) if hasattr(args, "rpc_tracker") else None)


def run_tune(args: argparse.Namespace) -> int:
    from tcl.tuning import platforms
    from tcl.tuning.tune import tune_model
    from tcl.tuning.user_models import load_model

    if (args.target_model is None) == (args.network is None):
        raise ValueError("name the model to tune once: tcl tune MODEL (or --network NAME)")
    platform = platforms.get(args.platform)
    options = tune_options(args)
    platform.require_device(options.rpc)
    model = load_model(
        args.target_model or args.network,
        tiny=args.tiny,
        shapes=args.input_shape or (),
        dtypes=args.dtype or (),
        name=args.name,
    )
    _before_tuning(args, platform.threads)
    if options.rpc is None:
        _warn_if_moved_elsewhere([options.model_path, options.first_round_model], platform)
    report = tune_model(model, platform, args.work_dir, options)
    return _finish(report, args)


def _warn_if_moved_elsewhere(paths: list[str | None], platform: Platform) -> None:
    """A warning for a checkpoint ``tcl distill`` moved to other machines' programs than this
    platform's: a move is for the machine it was moved to (one moved to a Zen 4 picked worse
    first among an Intel Xeon's and a Zen 3's candidates than the packaged model)."""
    from tcl.errors import TclError
    from tcl.model import moved_to

    for path in dict.fromkeys(p for p in paths if p and p.endswith(".pt")):
        try:
            moves = moved_to(path)
        except (TclError, OSError):
            continue  # not a readable checkpoint: loading it for the run says why
        if moves and platform.id not in {m["id"] for m in moves}:
            where = ", ".join(f"{m['name']}-{m['id']} ({m['machine'] or '?'})" for m in moves)
            print(
                f"warning: {path} was moved by tcl distill to the programs of {where}, not of "
                f"this platform ({platform.name}-{platform.id}): a model moved to one machine "
                "has ranked another's programs worse than the model it was moved from; move it "
                "with this machine's programs (README: Moving to new hardware)"
            )


def run_quickstart(args: argparse.Namespace) -> int:
    """Tunes a zoo network on this CPU with the packaged base model: the README's main job."""
    from tcl.model import base_model_path
    from tcl.records import read_records, sample_data_path
    from tcl.tuning import platforms
    from tcl.tuning.tune import tune_model
    from tcl.tuning.user_models import load_model

    start = time.perf_counter()
    rs = read_records(sample_data_path())
    print(
        f"tcl quickstart: record core read {len(rs)} bundled MetaSchedule records in "
        f"{(time.perf_counter() - start) * 1e3:.1f} ms"
    )
    platform = platforms.get(args.platform)
    options = tune_options(args)
    first = (
        "other tasks' best programs, and it where a task has too few, pick"
        if options.transplants_fill_quick_round
        else "it and other tasks' best programs pick"
        if options.transplants
        else "it picks"
    )
    print(
        f"tuning {args.network} on {platform.name} ({counted(platform.threads, 'thread')}, "
        f"target {json.dumps(platform.target)}) for {options.minutes:g} min (at most "
        f"{counted(options.trials, 'trial')}) with the packaged base model "
        f"{base_model_path().name} ({first} each task's first programs, an XGB learning from "
        "the run's measurements the rest)"
    )
    model = load_model(args.network, tiny=args.tiny)
    _before_tuning(args, platform.threads)
    report = tune_model(model, platform, args.work_dir, options)
    return _finish(report, args)


def _finish(report: TuneReport, args: argparse.Namespace) -> int:
    """The report's lines, the library, and the report's JSON and plot; the exit status: 1 where
    the built network does not compute what the model does (the report says why), else 0."""
    print("\n".join(report.lines()))
    print(f"library {report.library} (how to run it: {Path(args.work_dir) / 'README.txt'})")
    _write_outputs(report, args)
    return 1 if report.output_warning() else 0


def _before_tuning(args: argparse.Namespace, threads: int) -> None:
    """Where MetaSchedule's log goes, and a warning when other processes keep the CPU busy:
    measurements then rank programs by the noise (a 2-thread TVM runtime with one core taken
    ran a tuned network 80x slower)."""
    from tcl.tuning.timing import machine_load

    if not args.verbose:
        print(
            f"MetaSchedule's and TVM's logs: {Path(args.work_dir) / 'logs'} "
            "(--verbose shows them here)"
        )
    load = machine_load()
    if load.busy:
        print(
            f"warning: {load.text()}; tuning measures {threads}-thread programs on it, so its "
            "measurements and timings will be slow and noisy: tune on a quiet machine"
        )


def _write_outputs(report: TuneReport, args: argparse.Namespace) -> None:
    """The JSON report and the PNG of its curve (default: in the work directory)."""
    from tcl.tuning.tune import plot_curves, write_report

    json_path = Path(args.json or Path(args.work_dir) / "report.json")
    png_path = Path(args.png or json_path.with_suffix(".png"))
    write_report(report, json_path)
    plot_curves([report], png_path, f"{report.network} on {report.platform}")
    print(f"report {json_path}; latency curves {png_path}")
