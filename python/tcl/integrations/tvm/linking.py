"""A CPU candidate exported as a shared library that the runner opens as it is.

MetaSchedule's builder exports each candidate as a tar of object files (``default_export``,
one ``tar`` process) and its runner makes a shared library of it before each run
(``tvm.runtime.load_module``: an ``untar`` and a ``g++ -shared`` process): three processes a
candidate. A CPU candidate is one object file whose only undefined symbols are TVM's runtime's
and the C library's, which the runner's process has loaded, so :func:`export_linked` links it
in the build worker with the system linker alone (``ld -shared``), and the runner only opens
it: BERT-tiny's random programs ran in 0.75-0.80x the time on one core of a Zen 4, 21-30 ms
less a program (bench/README.md, *Candidates linked where they are built*). Where that cannot
be done (no ``ld``, a module with imported device code, a link that fails) it exports as
MetaSchedule does: :func:`tvm.s_tir.meta_schedule.builder.local_builder.default_export`, the
reference twin (``tests/integrations/tvm/test_linking.py`` checks that both compute alike).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any

# The name MetaSchedule gives an exported candidate, with a shared library's suffix.
ARTIFACT = "tvm_tmp_mod.so"


def linker() -> str | None:
    """The system linker's path (None where there is none on ``PATH``)."""
    return shutil.which("ld")


def link_shared(output: str, objects: list[str], options: Any = None) -> None:
    """``export_library``'s ``fcompile``: ``objects`` linked into the shared library ``output``
    by ``ld`` (with the C maths library, as ``g++ -shared`` links it), raising
    :class:`RuntimeError` with the linker's message where it fails."""
    ld = linker()
    if ld is None:
        raise RuntimeError("no system linker (ld) on PATH")
    done = subprocess.run(
        [ld, "-shared", "-o", output, *objects, "-lm"], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"ld -shared failed: {done.stderr.strip()}")


link_shared.output_format = "so"  # type: ignore[attr-defined]


def linkable(rt_mod: Any) -> bool:
    """Whether ``rt_mod`` (a built candidate) is one CPU object that :func:`link_shared` can
    make a library of: an ``llvm`` module importing no device code, and a linker found."""
    return rt_mod.kind == "llvm" and not rt_mod.imports and linker() is not None


def export_linked(rt_mod: Any) -> str:
    """In a build worker: the path of ``rt_mod`` exported as a shared library linked by
    :func:`link_shared`, or as MetaSchedule's tar of objects where :func:`linkable` says no or
    the link fails (``tvm.runtime.load_module`` opens either)."""
    from tvm.s_tir.meta_schedule.builder.local_builder import default_export

    if not linkable(rt_mod):
        return str(default_export(rt_mod))
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, ARTIFACT)
    try:
        rt_mod.export_library(path, fcompile=link_shared)
    except RuntimeError:
        shutil.rmtree(directory, ignore_errors=True)
        return str(default_export(rt_mod))
    return path
