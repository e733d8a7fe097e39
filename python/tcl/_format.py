"""Counts in words, for what tcl prints: "1 thread", "2 threads", "12,345 records"."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with ``noun`` in the number it calls for, thousands separated."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
