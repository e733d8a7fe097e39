"""Exceptions raised by tcl. The C++ core raises these same classes (see cpp/bindings.cc)."""

from __future__ import annotations


class TclError(Exception):
    """Base class of every error tcl raises on purpose."""


class RecordError(TclError, ValueError):
    """A measured record that cannot be read.

    Attributes
    ----------
    file : str
        The file the record came from.
    line : int
        1-based line number in that file.
    reason : str
        A stable code: ``invalid_json``, ``wrong_type``, ``missing_field``, ``out_of_range``,
        ``unknown_workload`` or ``too_large`` (a line of over 2^20 JSON values, whose parse
        would take 20x its size in memory). Lenient reads count skipped lines under these codes.
    field : str
        JSON path of the offending value (``"r[0]"``, ``"trace[0][3]"``), empty for the whole line.
    detail : str
        What was wrong, in words.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int = 0,
        reason: str = "",
        field: str = "",
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.reason = reason
        self.field = field
        self.detail = detail

    @classmethod
    def at(cls, file: str, line: int, reason: str, field: str, detail: str) -> RecordError:
        """Builds the error with the same message layout as the C++ core."""
        where = f" in {field}" if field else ""
        return cls(
            f"{file}:{line}: {reason}{where}: {detail}",
            file=file,
            line=line,
            reason=reason,
            field=field,
            detail=detail,
        )


class FormatVersionError(TclError):
    """A saved file (record set, vocabulary, checkpoint) of a format this tcl cannot read."""


class CheckpointError(TclError):
    """A model checkpoint that cannot be used: unreadable, corrupted (its checksum differs),
    missing a part, or configured outside the bounds a model can have."""


__all__ = ["CheckpointError", "FormatVersionError", "RecordError", "TclError"]
