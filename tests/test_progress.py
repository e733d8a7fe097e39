"""tcl.progress and tcl._format: bars only where asked for and on a terminal; counts in words."""

from __future__ import annotations

import io

import pytest

from tcl import progress
from tcl._format import counted


def test_counts_take_the_number_they_call_for() -> None:
    assert counted(1, "thread") == "1 thread"
    assert counted(2, "thread") == "2 threads"
    assert counted(0, "task") == "0 tasks"
    assert counted(12345, "record") == "12,345 records"
    assert counted(1, "fresh process", "fresh processes") == "1 fresh process"
    assert counted(5, "fresh process", "fresh processes") == "5 fresh processes"


def test_bars_only_when_asked_and_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress.wanted()  # a pipe or a file: no bar
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert progress.wanted() and not progress.wanted(quiet=True)
    with progress.bar(True, 3, "steps", "step") as shown:
        shown.update(3)
    assert "steps:" in terminal.getvalue() and "/3 " in terminal.getvalue()
    before = terminal.getvalue()
    assert list(progress.bar(False, iterable=range(4))) == [0, 1, 2, 3]
    assert terminal.getvalue() == before  # a disabled bar writes nothing
