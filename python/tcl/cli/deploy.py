"""``tcl run``: a library written by ``tcl tune`` run on inputs from .npy files."""

from __future__ import annotations

import argparse
from typing import Any

from tcl.cli.args import input_file, output_file


def add_commands(commands: Any) -> None:
    run = commands.add_parser("run", help="run a library written by tcl tune on .npy inputs")
    run.add_argument("library", type=input_file, help="WORK_DIR/<name>.so from tcl tune")
    run.add_argument(
        "--input",
        action="append",
        required=True,
        type=input_file,
        help=".npy file of an input, in order (repeat for several inputs)",
    )
    run.add_argument("--output", type=output_file, help=".npy file for the (first) output")
    run.set_defaults(func=run_library)


def run_library(args: argparse.Namespace) -> int:
    import numpy as np

    from tcl.errors import TclError

    inputs = []
    for path in args.input:
        try:
            inputs.append(np.load(path, allow_pickle=False))  # a .npy never runs code here
        except ValueError as err:
            raise TclError(f"{path}: not a plain .npy array ({err})") from None
    import tvm
    from tvm import relax

    from tcl.tuning.tune import first_output

    device = tvm.cpu()
    vm = relax.VirtualMachine(tvm.runtime.load_module(args.library), device)
    result = first_output(vm["main"](*[tvm.runtime.tensor(x, device) for x in inputs])).numpy()
    print(f"output {result.dtype} {tuple(result.shape)}: {np.array2string(result.ravel()[:6])}")
    if args.output:
        np.save(args.output, result)
        print(f"wrote {args.output}")
    return 0
