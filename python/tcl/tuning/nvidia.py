"""NVIDIA GPUs: the local device described, the TVM target that fits it, NVRTC to compile for it.

A CUDA platform's target is read off the device it measures on (its architecture, shared
memory, threads and registers per block, warp size, L2 size) rather than picked from a list of
tags, so a GPU that TVM has no tag for is tuned with its own limits, and the platform's id
(which hashes the target and the described device) never mixes records of two GPUs.

The device is described through the CUDA driver (``libcuda.so.1``, as the CUDA runtime finds
it: ``CUDA_VISIBLE_DEVICES`` applies), so that neither torch nor TVM's CUDA runtime has to load
for it. apache-tvm compiles generated CUDA with NVRTC through ``cuda-bindings``; the ``tcl[cuda]``
extra installs it with NVRTC and the headers from PyPI, and :func:`use_pip_toolkit` points TVM at
them where no CUDA toolkit is installed. On a machine without a GPU a CUDA build still succeeds
(the module carries its CUDA source, compiled when it is loaded on a GPU); :func:`cuda_sources`
and :func:`compile_cuda` compile that source to a cubin here, to check it before a GPU sees it.
"""

from __future__ import annotations

import ctypes
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tcl.errors import TclError

# CUdevice_attribute values of the CUDA driver API (cuda.h).
_ATTRIBUTES = {
    "max_threads_per_block": 1,
    "max_shared_memory_per_block": 8,
    "warp_size": 10,
    "registers_per_block": 12,
    "multiprocessors": 16,
    "l2_cache_bytes": 38,
    "major": 75,
    "minor": 76,
}


@dataclass(frozen=True)
class GpuDescription:
    """What the tuner and the cost model need to know of one NVIDIA GPU."""

    name: str
    major: int  # compute capability
    minor: int
    multiprocessors: int
    max_threads_per_block: int
    max_shared_memory_per_block: int  # bytes, without the opt-in carve-out
    registers_per_block: int
    warp_size: int
    l2_cache_bytes: int
    memory_bytes: int

    @property
    def arch(self) -> str:
        """The code generation architecture: ``sm_90a`` for compute capability 9.0 (from
        Hopper on, the architecture-specific features; a cubin for it runs on this GPU's
        generation alone, as a tuned one is meant to), ``sm_80`` for 8.0."""
        suffix = "a" if self.major >= 9 else ""
        return f"sm_{self.major}{self.minor}{suffix}"

    @property
    def label(self) -> str:
        """The device as platform ids and reports name it."""
        memory = self.memory_bytes / 2**30
        return f"{self.name} ({self.arch}, {self.multiprocessors} SMs, {memory:.0f} GiB)"


def cuda_target(gpu: GpuDescription) -> dict[str, Any]:
    """The TVM target JSON for ``gpu``: TVM's own tags (``nvidia/nvidia-h100``) set the same
    attributes, from a table; the host code is plain LLVM for this CPU."""
    return {
        "kind": "cuda",
        "arch": gpu.arch,
        "max_num_threads": gpu.max_threads_per_block,
        "max_threads_per_block": gpu.max_threads_per_block,
        "max_shared_memory_per_block": gpu.max_shared_memory_per_block,
        "registers_per_block": gpu.registers_per_block,
        "thread_warp_size": gpu.warp_size,
        "l2_cache_size_bytes": gpu.l2_cache_bytes,
        "host": {"kind": "llvm"},
    }


def local_gpu(index: int = 0) -> GpuDescription | None:
    """The ``index``-th visible NVIDIA GPU, described through the CUDA driver; None where there
    is no driver or no such GPU."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    if index >= count.value:
        return None
    device = ctypes.c_int(0)
    if driver.cuDeviceGet(ctypes.byref(device), index) != 0:
        return None
    name = ctypes.create_string_buffer(256)
    memory = ctypes.c_size_t(0)
    driver.cuDeviceGetName(name, len(name), device)
    driver.cuDeviceTotalMem_v2(ctypes.byref(memory), device)
    values = {}
    for field, attribute in _ATTRIBUTES.items():
        value = ctypes.c_int(0)
        if driver.cuDeviceGetAttribute(ctypes.byref(value), attribute, device) != 0:
            return None
        values[field] = value.value
    return GpuDescription(
        name=name.value.decode(errors="replace"), memory_bytes=memory.value, **values
    )


def require_local_gpu() -> GpuDescription:
    """:func:`local_gpu`, or a :class:`TclError` saying what is missing."""
    gpu = local_gpu()
    if gpu is None:
        raise TclError(
            "no NVIDIA GPU is visible here (the CUDA driver libcuda.so.1 did not load or lists "
            "no device): tune for a GPU on the machine that has it, or name a GPU's preset "
            "(cuda-a100, cuda-h100) and measure through --rpc-tracker"
        )
    return gpu


def pip_toolkit() -> Path | None:
    """The CUDA headers and NVRTC installed from PyPI (``nvidia-cuda-runtime`` and
    ``nvidia-cuda-nvrtc``: ``site-packages/nvidia/cu13``, or ``cu12``), or None."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")  # the namespace package of NVIDIA's wheels
    for root in map(Path, (spec and spec.submodule_search_locations) or []):
        for version in ("cu13", "cu12"):
            if (root / version / "include" / "cuda_runtime.h").is_file():
                return root / version
    return None


def use_pip_toolkit() -> Path | None:
    """Points TVM's NVRTC compilation at the PyPI toolkit (:func:`pip_toolkit`) where the
    environment names no CUDA toolkit (``CUDA_PATH``) and none is on the PATH: TVM looks for
    the headers under ``CUDA_PATH`` and for libcu++ (``cuda/std``) where a full toolkit keeps
    it, so its include folder is added. Returns the toolkit in use, None for a system one."""
    import shutil

    if os.environ.get("CUDA_PATH") or shutil.which("nvcc"):
        return None
    toolkit = pip_toolkit()
    if toolkit is None:
        return None
    os.environ["CUDA_PATH"] = str(toolkit)
    cccl = toolkit / "include" / "cccl"
    extra = os.environ.get("TVM_CUDA_NVRTC_EXTRA_OPTS", "")
    if cccl.is_dir() and str(cccl) not in extra:
        os.environ["TVM_CUDA_NVRTC_EXTRA_OPTS"] = f"{extra} -I{shlex.quote(str(cccl))}".strip()
    return toolkit


def _imported(module: Any) -> list[Any]:
    """Every module that a built or loaded ``module`` (a relax executable, a TIR build, a
    loaded library) imports, directly or not."""
    found: list[Any] = []
    pending = [getattr(module, "mod", module)]  # a relax executable wraps its module
    while pending:
        for imported in pending.pop().imports:
            found.append(imported)
            pending.append(imported)
    return found


def runs_on_gpu(module: Any) -> bool:
    """Whether ``module`` holds CUDA kernels (a library tuned for a CUDA platform)."""
    return any(m.kind == "cuda" for m in _imported(module))


def cuda_sources(module: Any) -> list[str]:
    """The CUDA C++ of every CUDA module imported by a built ``module``: source as generated,
    where no GPU compiled it at build time."""
    return [str(m.inspect_source("")) for m in _imported(module) if m.kind == "cuda"]


def compile_cuda(source: str, arch: str) -> bytes:
    """``source`` compiled by NVRTC (as TVM compiles it) to a cubin for ``arch`` (``sm_90a``);
    a :class:`TclError` with NVRTC's log where it fails or is not installed."""
    import warnings

    from tvm.support import nvcc

    use_pip_toolkit()
    try:
        with warnings.catch_warnings():
            # cuda-pathfinder cannot read the version of PyPI's NVRTC from its file name and
            # says so; NVRTC loads its built-in headers itself.
            warnings.filterwarnings("ignore", "Cannot determine the NVRTC version", RuntimeWarning)
            return bytes(nvcc.compile_cuda(source, target_format="cubin", arch=arch))
    except RuntimeError as err:
        raise TclError(f"NVRTC could not compile the CUDA source for {arch}: {err}") from None


__all__ = [
    "GpuDescription",
    "compile_cuda",
    "cuda_sources",
    "cuda_target",
    "local_gpu",
    "pip_toolkit",
    "require_local_gpu",
    "runs_on_gpu",
    "use_pip_toolkit",
]
