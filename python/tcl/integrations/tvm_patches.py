"""Workarounds that stock apache-tvm 0.27 needs on this stack (DESIGN.md §7).

TVMScript calls ``inspect.stack()`` while parsing; on Python 3.11 with torch in ``sys.modules``
that walk takes tens of seconds (``import tvm.s_tir.tensor_intrin``: 43.6 s), and every fresh
MetaSchedule builder worker pays it inside its 30 s build timeout, so a tune measures nothing.
A stack walk that skips the per-frame module search gives the same frames in a fraction of the
time. Call :func:`patch_inspect_stack` before tuning and pass :func:`worker_init` as the
builder's and runner's ``initializer``.
"""

from __future__ import annotations

import inspect
import linecache
import sys
from types import FrameType
from typing import Any

_original_stack = inspect.stack


def fast_stack(context: int = 1) -> list[inspect.FrameInfo]:
    """``inspect.stack`` without resolving each frame's module (which scans sys.modules)."""
    frame: FrameType | None = sys._getframe(1)
    out: list[inspect.FrameInfo] = []
    while frame is not None:
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        lines: list[str] | None = None
        index: int | None = None
        if context > 0:
            line = linecache.getline(filename, lineno)
            if line:
                lines, index = [line], 0
        info: Any = inspect.FrameInfo(frame, filename, lineno, frame.f_code.co_name, lines, index)
        out.append(info)
        frame = frame.f_back
    return out


def patch_inspect_stack() -> None:
    """Installs :func:`fast_stack` as ``inspect.stack`` (idempotent)."""
    inspect.stack = fast_stack


def unpatch_inspect_stack() -> None:
    inspect.stack = _original_stack


def worker_init() -> None:
    """Initializer for MetaSchedule builder/runner worker processes: patch, then pay the slow
    TVMScript import once, outside any build timeout."""
    patch_inspect_stack()
    import tvm.s_tir.tensor_intrin  # noqa: F401
