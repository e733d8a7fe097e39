"""The files that ship inside the package (``tcl/data``): the pre-trained cost models."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def packaged_file(files: dict[str, str], device: str, what: str, remedy: str) -> Path:
    """The path of ``files[device]`` in the installed package; a ``device`` it has none for is
    a ValueError, a file missing from the install a FileNotFoundError saying ``remedy``."""
    if device not in files:
        raise ValueError(f"no {what} for device {device!r} ({', '.join(files)})")
    path = Path(str(resources.files("tcl") / "data" / files[device]))
    if not path.exists():
        raise FileNotFoundError(f"the {what} {path} is missing from this install; {remedy}")
    return path
