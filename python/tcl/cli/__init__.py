"""The ``tcl`` command line: one module per command group, each parsing its options and calling
the library (heavy imports, tvm and torch, stay inside the commands).

records.py  ``tcl records stats|convert``, ``tcl sample``
zoo.py      ``tcl zoo list|tasks``
measure.py  ``tcl collect``, ``tcl active``
model.py    ``tcl train``, ``tcl eval``, ``tcl distill``
tune.py     ``tcl tune``, ``tcl quickstart``
deploy.py   ``tcl run``, ``tcl bench``
args.py     argument types and the helpers every group shares
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from tcl.cli import deploy, measure, model, records, tune, zoo
from tcl.cli.args import Parser
from tcl.errors import TclError
from tcl.progress import wanted

_GROUPS = (records, zoo, measure, model, tune, deploy)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tcl", description="tcl: fast, cheap TVM tensor-program tuning")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in _GROUPS:
        group.add_commands(commands)
    _add_quiet(parser)
    return parser


def _add_quiet(parser: argparse.ArgumentParser) -> None:
    """``-q/--quiet`` on every command (no progress bars; they are off anyway when stderr is not
    a terminal)."""
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        parser.add_argument("-q", "--quiet", action="store_true", help="show no progress bars")
    for action in subcommands:
        for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
            _add_quiet(sub)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # a command-line error (one line already printed) or --help
        return done.code if isinstance(done.code, int) else 2
    args.progress = wanted(args.quiet)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed stdout fails here, inside this handler, not at exit
        return code
    except (TclError, FileNotFoundError, ValueError) as err:
        print(f"tcl: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (`tcl records stats ... | head`): stop quietly, and
        # keep Python from failing again while it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
