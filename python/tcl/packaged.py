"""The files that ship inside the package (``tcl/data``): the pre-trained cost models."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def packaged_file(files: dict[str, str], device: str, what: str, remedy: str) -> Path:
    """The path of ``files[device]`` in the installed package; a ``device`` it has none for is
    a ValueError, a file missing from the install a FileNotFoundError saying ``remedy``."""
    if device not in files:
        raise ValueError(f"no {what} for device {device!r} ({', '.join(files)})")
    return _installed(files[device], what, remedy)


def layout_file(
    files: dict[tuple[str, str], str],
    device: str,
    conv_layout: str | None,
    what: str,
    remedy: str,
) -> Path | None:
    """The path of the packaged file of ``files`` for ``device``'s programs whose convolutions
    are in ``conv_layout``, None where the package has none for them; a file missing from the
    install is a FileNotFoundError saying ``remedy``."""
    name = files.get((device, conv_layout or ""))
    return None if name is None else _installed(name, what, remedy)


def _installed(name: str, what: str, remedy: str) -> Path:
    path = Path(str(resources.files("tcl") / "data" / name))
    if not path.exists():
        raise FileNotFoundError(f"the {what} {path} is missing from this install; {remedy}")
    return path
