"""Progress bars for work that can take more than a few seconds (training, distillation,
scoring, sampling, reading large inputs).

A library call shows none unless asked (``progress=True``); tcl's commands ask unless
``--quiet`` is given or stderr is not a terminal (:func:`wanted`), so that logs and pipes get
the results alone.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any


def wanted(quiet: bool = False) -> bool:
    """Whether a command shows progress: not ``quiet``, and stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


def bar(
    enabled: bool,
    total: float | None = None,
    desc: str = "",
    unit: str = "it",
    iterable: Iterable[Any] | None = None,
) -> Any:
    """A tqdm bar on stderr (a no-op bar when not ``enabled``) that clears itself when done;
    over ``iterable`` where one is given."""
    from tqdm import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled,
        dynamic_ncols=True,
        leave=False,
    )


def write(line: str) -> None:
    """Prints ``line`` on stdout without breaking a bar shown on stderr."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stdout)
