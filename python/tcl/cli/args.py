"""Argument types and helpers of the ``tcl`` command line: every user error is one line on stderr
and exit code 2, found while parsing, before any work starts."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (``tcl: error: ...``), without the usage."""

    def error(self, message: str) -> NoReturn:
        print(f"tcl: error: {message}", file=sys.stderr)
        raise SystemExit(2)


# A parser or one of its argument groups (``--help`` lists a group's options under its title).
Options = argparse._ActionsContainer


def positive_int(text: str) -> int:
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    return _whole_number(text, 0)


def _whole_number(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def unroll_bound(text: str) -> int | str:
    """A bound on the unroll step of programs: a whole number of 0 or more, or ``any``."""
    from tcl.tuning.options import ANY_UNROLL

    if text == ANY_UNROLL:
        return text
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of 0 or more, or any, got {text!r}"
        ) from None


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {value}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def platform_name(text: str) -> str:
    from tcl.tuning.platforms import PRESETS

    if text not in PRESETS:
        raise argparse.ArgumentTypeError(
            f"unknown platform {text!r}; presets: {', '.join(PRESETS)}"
        )
    return text


def _check_networks(names: list[str]) -> None:
    from tcl import zoo

    unknown = [n for n in names if n not in zoo.NETWORKS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown network {', '.join(map(repr, unknown))}; `tcl zoo list` names them"
        )


def network_name(text: str) -> str:
    _check_networks([text])
    return text


def model_spec(text: str) -> str:
    """What ``tcl tune`` takes: a zoo network, a .pt2 or .onnx file or FILE.py:FUNCTION."""
    from tcl import zoo

    if text in zoo.NETWORKS:
        return text
    path, _, function = text.rpartition(":")
    if path.endswith(".py") and function:
        if not Path(path).is_file():
            raise argparse.ArgumentTypeError(f"no such Python file: {path}")
        return text
    if text.endswith((".pt2", ".onnx")):
        if not Path(text).is_file():
            raise argparse.ArgumentTypeError(f"no such file: {text}")
        return text
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a zoo network (`tcl zoo list` names them), a .pt2 file "
        "(torch.export.save), an .onnx file or FILE.py:FUNCTION"
    )


def input_shape(text: str) -> list[int]:
    """An input's shape: positive sizes separated by commas or x (``1,3,224,224``)."""
    parts = text.replace("x", ",").split(",")
    if not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape: positive sizes separated by commas, e.g. 1,3,224,224"
        )
    return [int(p) for p in parts]


def dtype_name(text: str) -> str:
    """A numpy dtype name (float32, int64, ...)."""
    import numpy as np

    try:
        return str(np.dtype(text))
    except TypeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a dtype (float32, int64, ...)") from None


def input_file(text: str) -> str:
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text}")
    return text


def network_spec(text: str) -> str:
    """A zoo network, a comma-separated list, 'all', 'training' or 'held-out'."""
    if text not in ("all", "training", "held-out"):
        _check_networks([n.strip() for n in text.split(",") if n.strip()])
    return text


def _writable_dir(directory: Path) -> bool:
    """Whether ``directory`` exists and is writable, or could be made (its nearest existing
    ancestor is a writable directory)."""
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            return candidate.is_dir() and os.access(candidate, os.W_OK | os.X_OK)
    return False


def output_file(text: str) -> str:
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file to write")
    if not _writable_dir(path.absolute().parent):
        raise argparse.ArgumentTypeError(f"cannot write {text}: its directory is not writable")
    return text


def output_dir(text: str) -> str:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    if not _writable_dir(path.absolute()):
        raise argparse.ArgumentTypeError(f"cannot write into {text}: not writable")
    return text


def split_names(spec: str) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [s.strip() for s in spec.split(",") if s.strip()]


def network_names(spec: str) -> list[str]:
    """The zoo networks a :func:`network_spec` names."""
    from tcl import zoo

    groups = {"all": zoo.names(), "training": list(zoo.TRAINING), "held-out": list(zoo.HELD_OUT)}
    return groups.get(spec) or split_names(spec)


def add_rpc(parser: Options) -> None:
    parser.add_argument("--rpc-tracker", help="HOST:PORT of a TVM RPC tracker to measure through")
    parser.add_argument("--rpc-key", help="device key registered with the tracker")


def rpc(args: argparse.Namespace) -> tuple[str, int, str] | None:
    """(host, port, key) of ``--rpc-tracker HOST:PORT --rpc-key KEY``, or None."""
    if not args.rpc_tracker:
        return None
    host, _, port = args.rpc_tracker.rpartition(":")
    if not host or not port.isdigit() or not args.rpc_key:
        raise ValueError("--rpc-tracker takes HOST:PORT and needs --rpc-key")
    return (host, int(port), args.rpc_key)


def given(args: argparse.Namespace, **names: str) -> dict[str, Any]:
    """Keyword arguments for a library call from the options the user gave: ``names`` maps each
    keyword to its option's attribute. Options left out are not passed, so every default is
    stated once, in the library."""
    values = {keyword: getattr(args, attr) for keyword, attr in names.items()}
    return {keyword: value for keyword, value in values.items() if value is not None}
