"""Which instruction-set build of the C++ model kernels runs (cpp/isa.h).

The selective scan and the causal convolution are compiled for AVX-512 (F, VL, BW, DQ), for AVX2
with FMA and for baseline x86-64; at import the best build the CPU's features allow is chosen, or
the one named by the environment variable ``TCL_KERNEL_ISA`` (``auto``, ``baseline``, ``avx2``,
``avx512``). Every build computes the same function; they differ in rounding (FMA contracts
``a * b + c``), which the kernel tests bound against float64 twins.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tcl import _core

ISAS = ("baseline", "avx2", "avx512")


def active() -> str:
    """The build the kernels run now."""
    return _core.kernel_isa()


def supported() -> list[str]:
    """The builds this CPU can run, baseline first and best last."""
    return list(_core.supported_kernel_isas())


def select(name: str) -> None:
    """Runs the kernels as ``name`` from now on (``auto`` for the best); raises
    :class:`tcl.errors.TclError` naming the supported builds when the CPU cannot run it."""
    _core.set_kernel_isa(name)


@contextmanager
def forced(name: str) -> Iterator[None]:
    """Runs the kernels as ``name`` inside the block, then restores the build that ran before."""
    before = active()
    select(name)
    try:
        yield
    finally:
        select(before)
