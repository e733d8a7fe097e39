"""``tcl run`` and ``tcl bench``: a library written by ``tcl tune`` run, or timed, on inputs
from .npy files."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from tcl._format import counted
from tcl.cli.args import given, input_file, model_spec, output_file, positive_int


def add_commands(commands: Any) -> None:
    run = commands.add_parser("run", help="run a library written by tcl tune on .npy inputs")
    _add_library(run)
    run.add_argument("--output", type=output_file, help=".npy file for the (first) output")
    run.set_defaults(func=run_library)

    bench = commands.add_parser(
        "bench", help="time a library written by tcl tune (beside PyTorch eager with --model)"
    )
    _add_library(bench)
    bench.add_argument(
        "--model",
        type=model_spec,
        help="the model the library was tuned from (zoo name, .pt2, FILE.py:FUNCTION): PyTorch "
        "eager is timed beside the library, in a fresh process of its own each round",
    )
    bench.add_argument("--threads", type=positive_int, help="default: every core")
    bench.add_argument(
        "--processes",
        type=positive_int,
        help="fresh processes the library is timed in, one sample each (default: 5)",
    )
    bench.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    bench.set_defaults(func=bench_library)


def _add_library(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("library", type=input_file, help="WORK_DIR/<name>.so from tcl tune")
    parser.add_argument(
        "--input",
        action="append",
        required=True,
        type=input_file,
        help=".npy file of an input, in order (repeat for several inputs)",
    )


def _inputs(paths: list[str]) -> list[Any]:
    import numpy as np

    from tcl.errors import TclError

    inputs = []
    for path in paths:
        try:
            inputs.append(np.load(path, allow_pickle=False))  # a .npy never runs code here
        except ValueError as err:
            raise TclError(f"{path}: not a plain .npy array ({err})") from None
    return inputs


def run_library(args: argparse.Namespace) -> int:
    import numpy as np

    inputs = _inputs(args.input)
    import tvm
    from tvm import relax

    from tcl.tuning.latency import first_result
    from tcl.tuning.nvidia import runs_on_gpu

    library = tvm.runtime.load_module(args.library)
    device = tvm.cuda(0) if runs_on_gpu(library) else tvm.cpu()
    vm = relax.VirtualMachine(library, device)
    result = first_result(vm, [tvm.runtime.tensor(x, device) for x in inputs])
    print(f"output {result.dtype} {tuple(result.shape)}: {np.array2string(result.ravel()[:6])}")
    if args.output:
        np.save(args.output, result)
        print(f"wrote {args.output}")
    return 0


def bench_library(args: argparse.Namespace) -> int:
    from tcl.tuning.latency import time_library
    from tcl.tuning.timing import speedup_text
    from tcl.tuning.user_models import load_model

    inputs = _inputs(args.input)
    model = None if args.model is None else load_model(args.model)
    timings, load, threads = time_library(
        args.library, inputs, model, **given(args, threads="threads", rounds="processes")
    )
    processes = len(timings["library"].samples_ms)
    if args.json:
        figures = {
            k: {"median_ms": t.median, "samples_ms": t.samples_ms} for k, t in timings.items()
        }
        print(json.dumps({"threads": threads, "processes": processes, **figures}))
        return 0
    library = timings["library"]
    print(
        f"median [range] of {counted(processes, 'fresh process', 'fresh processes')}, "
        f"{counted(threads, 'thread')}:"
    )
    print(f"  {os.path.basename(args.library):<14} {library.text()}")
    if "torch" in timings:
        torch = timings["torch"]
        print(f"  PyTorch eager  {torch.text()}   speed-up {speedup_text(torch, library)}")
    print(load.text())
    return 0
