"""Platforms: a TVM target plus a description of the host that measures it.

Records are only comparable within one platform. A platform's id hashes the target JSON, the
runtime thread count and the measured host (CPU model, ISA flags, cores), so records from
different machines or settings are never mixed by accident. The CPU presets are the honest
variants of one x86 machine: the same CPU through different code generation
targets and thread counts, which rank the same schedules differently. ``cuda`` is this machine's
NVIDIA GPU, its target read off the device (:mod:`tcl.tuning.nvidia`); ``cuda-a100`` and
``cuda-h100`` are TVM's fixed tags, for pools and remote devices.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform as _platform
import shutil
import subprocess
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

_INTERESTING_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "neon",
    "asimd",
    "sve",
)


@dataclass(frozen=True)
class Host:
    """The machine a platform's measurements come from."""

    cpu_model: str
    flags: tuple[str, ...]
    cores: int
    machine: str
    gpu: str = ""

    @classmethod
    def current(cls) -> Host:
        model, flags = _platform.processor() or _platform.machine(), set()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key.strip() == "model name":
                        model = value.strip()
                    elif key.strip() in ("flags", "Features"):
                        flags = set(value.split())
        except OSError:
            pass
        return cls(
            model,
            tuple(f for f in _INTERESTING_FLAGS if f in flags),
            os.cpu_count() or 1,
            _platform.machine(),
            _gpu_name(),
        )


def usable_cores() -> list[int]:
    """The cores this process may run on, in order: its CPU affinity (what ``taskset`` or a
    container leaves it), or every core where the system does not say."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def _gpu_name() -> str:
    """The first NVIDIA GPU's name, or "" (nvidia-smi, so that torch is not imported)."""
    if shutil.which("nvidia-smi") is None:
        return ""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""


@dataclass(frozen=True)
class Platform:
    """A target and the conditions it is measured under.

    Attributes
    ----------
    name : str
        The preset name (or a user's label).
    target : dict
        TVM target JSON, e.g. ``{"kind": "llvm", "mcpu": "core-avx2", "num-cores": 1}``.
    threads : int
        ``TVM_NUM_THREADS`` of the runner: the runtime thread count (``num-cores`` in the target
        only shapes the search space).
    host : Host
        The measuring machine, filled in when the platform is resolved.
    """

    name: str
    target: dict[str, Any]
    threads: int
    host: Host = field(default_factory=Host.current)

    @property
    def kind(self) -> str:
        return str(self.target.get("kind", self.target.get("tag", "")))

    @property
    def is_cuda(self) -> bool:
        return self.kind == "cuda" or "nvidia" in str(self.target.get("tag", ""))

    def require_device(
        self, rpc: Any = None, otherwise: str = "measure through --rpc-tracker"
    ) -> None:
        """Raises a :class:`~tcl.errors.TclError` where this platform cannot be measured here:
        a CUDA platform needs an NVIDIA GPU on this machine, or a remote device (``rpc``);
        ``otherwise`` says what else the user can do. Points TVM at NVRTC from PyPI where no
        CUDA toolkit is installed (:func:`tcl.tuning.nvidia.use_pip_toolkit`)."""
        if not self.is_cuda:
            return
        from tcl.errors import TclError
        from tcl.tuning import nvidia

        nvidia.use_pip_toolkit()
        if rpc is None and nvidia.local_gpu() is None:
            raise TclError(
                f"platform {self.name} needs an NVIDIA GPU and none is visible here (the CUDA "
                f"driver libcuda.so.1 did not load or lists no device): {otherwise}"
            )

    @property
    def id(self) -> str:
        """Stable id: a hash of target, threads and host (not of the preset name)."""
        blob = json.dumps(
            {"target": self.target, "threads": self.threads, "host": asdict(self.host)},
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def tvm_target(self) -> Any:
        import tvm

        return tvm.target.Target(self.target)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "target": self.target,
            "threads": self.threads,
            "host": asdict(self.host),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Platform:
        host = data["host"]
        return cls(
            data["name"],
            dict(data["target"]),
            int(data["threads"]),
            Host(
                host["cpu_model"],
                tuple(host["flags"]),
                int(host["cores"]),
                host["machine"],
                host.get("gpu", ""),
            ),
        )


# What a cost model may know of a platform: a fixed-width descriptor (one-hot groups, so that
# platforms share the components they have in common and a new platform's own components are
# still untouched by training on the old ones). The width never depends on how many platforms
# a model has seen.
DESCRIPTOR_FEATURES = (
    "cpu",
    "gpu",
    "threads=1",
    "threads=2",
    "threads>=3",
    "simd128",
    "simd256",
    "simd512",
)
_SIMD512_CPUS = {
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
    "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
    "graniterapids", "znver4", "znver5", "x86-64-v4",
}  # fmt: skip
_SIMD256_CPUS = {
    "haswell", "core-avx2", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake",
    "znver1", "znver2", "znver3", "x86-64-v3", "bdver4",
}  # fmt: skip


def descriptor(target: dict[str, Any] | str) -> list[float]:
    """The platform descriptor (``DESCRIPTOR_FEATURES``) of a TVM target (JSON dict or string):
    device kind, thread count (``num-cores``) and SIMD width (from ``mcpu``/``mattr``)."""
    t = json.loads(target) if isinstance(target, str) else dict(target)
    kind = str(t.get("kind", ""))
    gpu = kind in ("cuda", "rocm", "vulkan", "metal", "opencl") or "nvidia" in str(t.get("tag"))
    features = dict.fromkeys(DESCRIPTOR_FEATURES, 0.0)
    features["gpu" if gpu else "cpu"] = 1.0
    if not gpu:
        cores = int(t.get("num-cores", 1) or 1)
        features["threads=1" if cores == 1 else "threads=2" if cores == 2 else "threads>=3"] = 1.0
        features[f"simd{simd_width(t)}"] = 1.0  # 128: SSE2 (x86-64) and NEON
    return [features[name] for name in DESCRIPTOR_FEATURES]


def simd_width(target: dict[str, Any]) -> int:
    """512, 256 or 128: the widest x86 vector ISA of a CPU target (JSON dict), from its
    ``mcpu`` and its ``mattr``."""
    mattr = " ".join(map(str, target.get("mattr", [])))
    width = _simd_width(str(target.get("mcpu", "")), str(target.get("mtriple", "")))
    if width == 512 or "avx512f" in mattr:
        return 512
    return 256 if width == 256 or "avx2" in mattr else 128


@functools.lru_cache(maxsize=256)
def _simd_width(mcpu: str, mtriple: str) -> int:
    """512, 256 or 128: the widest x86 vector ISA of LLVM's CPU ``mcpu``. The tables answer for
    every CPU whose records tcl holds, without importing TVM; any other name (a CPU newer than
    the tables, an alias such as ``skx``) is asked of LLVM, so that an Arrow Lake or a Lunar Lake
    is not read as SSE."""
    if mcpu in _SIMD512_CPUS:
        return 512
    if mcpu in _SIMD256_CPUS:
        return 256
    if not mcpu or mcpu == "generic":
        return 128
    return _llvm_simd_width(mcpu, mtriple)


def _llvm_simd_width(mcpu: str, mtriple: str = "") -> int:
    """LLVM's answer for ``mcpu`` (on ``mtriple``, default this host's): 512 with AVX-512F, 256
    with AVX2, else 128; 128 for a name LLVM does not know or a CPU of another architecture."""
    import tvm
    from tvm.target import codegen

    triple = mtriple or str(codegen.llvm_get_system_triple())
    if not triple.startswith("x86_64") or not codegen.llvm_is_valid_cpu(mcpu, triple):
        return 128
    target = tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "mtriple": triple})
    if codegen.target_has_features("avx512f", target):
        return 512
    return 256 if codegen.target_has_features("avx2", target) else 128


def per_record_descriptors(rs: Any) -> npt.NDArray[np.float32]:
    """(n, len(DESCRIPTOR_FEATURES)) float32: every record's platform descriptor, from its own
    target (a dataset merged from several platforms mixes them; ``records_descriptor`` is the
    one descriptor of a single platform's records)."""
    table = np.array(
        [descriptor(t) for t in rs.targets] or [[0.0] * len(DESCRIPTOR_FEATURES)],
        dtype=np.float32,
    )
    return table[np.asarray(rs.columns["target"], dtype=np.int64)]


def records_descriptor(rs: Any) -> list[float]:
    """The descriptor of a record set's platform: the target of its first record (a collection
    directory holds one platform's records)."""
    return descriptor(rs.targets[int(rs.columns["target"][0])])


def collection_platform(directory: str | os.PathLike[str]) -> dict[str, str] | None:
    """Which platform a collection directory's records were measured on, from its manifest
    (``tcl collect`` writes it): ``{"name", "id", "machine"}``, or None where the directory has
    no manifest naming one (a MetaSchedule database, a tuning work directory)."""
    manifest = os.path.join(directory, "manifest.json")
    if not os.path.isfile(manifest):
        return None
    with open(manifest, encoding="utf-8") as f:
        data = json.load(f)
    entry = data.get("platform") if isinstance(data, dict) else None
    if not isinstance(entry, dict) or not {"name", "id"} <= entry.keys():
        return None
    host = entry.get("host")
    machine = str(host.get("gpu") or host.get("cpu_model") or "") if isinstance(host, dict) else ""
    return {"name": str(entry["name"]), "id": str(entry["id"]), "machine": machine}


def _native_mcpu() -> str:
    import tvm

    return str(tvm.target.codegen.llvm_get_system_cpu())


def _llvm(mcpu: str, cores: int) -> dict[str, Any]:
    return {"kind": "llvm", "mcpu": mcpu, "num-cores": cores}


# The platform tcl tunes for when none is named: this CPU as LLVM sees it, two threads.
DEFAULT_PLATFORM = "cpu-native-2t"

# name -> (target factory, runtime threads). Factories run lazily: "native" asks LLVM for the host.
PRESETS: dict[str, tuple[Any, int]] = {
    "cpu-native-2t": (lambda: _llvm(_native_mcpu(), 2), 2),
    "cpu-native-1t": (lambda: _llvm(_native_mcpu(), 1), 1),
    "cpu-avx2-1t": (lambda: _llvm("core-avx2", 1), 1),
    "cpu-x86-64-1t": (lambda: _llvm("x86-64", 1), 1),
    "cpu-avx512-2t": (lambda: _llvm("skylake-avx512", 2), 2),
    "cuda": (lambda: _local_cuda_target(), 1),
    "cuda-a100": (lambda: {"tag": "nvidia/nvidia-a100", "host": {"kind": "llvm"}}, 1),
    "cuda-h100": (lambda: {"tag": "nvidia/nvidia-h100", "host": {"kind": "llvm"}}, 1),
}


# The preset of this machine's NVIDIA GPU.
LOCAL_CUDA = "cuda"


def _local_cuda_target() -> dict[str, Any]:
    from tcl.tuning import nvidia

    return nvidia.cuda_target(nvidia.require_local_gpu())


def cuda_platform(gpu: Any, name: str = LOCAL_CUDA) -> Platform:
    """The platform of an NVIDIA GPU (a :class:`tcl.tuning.nvidia.GpuDescription`): its own
    target, and the host with this GPU named in full, so that records of two GPUs (or of one
    GPU in two machines) never share an id."""
    from tcl.tuning import nvidia

    return Platform(name, nvidia.cuda_target(gpu), 1, replace(Host.current(), gpu=gpu.label))


def get(name: str) -> Platform:
    """The platform of a preset name, measured on this host (``cuda``: its first visible
    NVIDIA GPU, a :class:`~tcl.errors.TclError` where there is none)."""
    if name not in PRESETS:
        raise KeyError(f"unknown platform {name!r}; presets: {', '.join(PRESETS)}")
    if name == LOCAL_CUDA:
        from tcl.tuning import nvidia

        return cuda_platform(nvidia.require_local_gpu())
    make_target, threads = PRESETS[name]
    return Platform(name, make_target(), threads)
