"""Platforms: presets, ids that separate hosts and settings, round trips."""

from __future__ import annotations

import dataclasses
import os

import pytest

from tcl.tuning import platforms


def test_usable_cores_are_those_the_process_is_pinned_to() -> None:
    """A process pinned to one core (as ``taskset -c 0`` does) may use that core only; this one
    some of the machine's, in order."""
    import subprocess
    import sys

    cores = platforms.usable_cores()
    assert cores and cores == sorted(set(cores)) and len(cores) <= (os.cpu_count() or 1)
    code = (
        "import os; os.sched_setaffinity(0, {0}); "
        "from tcl.tuning import platforms; print(platforms.usable_cores())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[0]"


def test_presets_resolve() -> None:
    for name in platforms.PRESETS:
        if name == platforms.LOCAL_CUDA:
            continue  # this machine's GPU, where it has one: tests/tuning/test_nvidia.py
        p = platforms.get(name)
        assert p.name == name and p.threads >= 1 and len(p.id) == 16
    assert platforms.get("cpu-avx2-1t").target == {
        "kind": "llvm",
        "mcpu": "core-avx2",
        "num-cores": 1,
    }
    assert platforms.get("cuda-a100").is_cuda and not platforms.get("cpu-avx2-1t").is_cuda
    with pytest.raises(KeyError, match="presets"):
        platforms.get("tpu")


def test_ids_separate_targets_threads_and_hosts() -> None:
    a = platforms.get("cpu-avx2-1t")
    assert a.id == platforms.get("cpu-avx2-1t").id
    assert a.id != platforms.get("cpu-x86-64-1t").id
    assert a.id != dataclasses.replace(a, threads=2).id
    other_host = dataclasses.replace(a, host=dataclasses.replace(a.host, cpu_model="Other CPU"))
    assert a.id != other_host.id
    assert a.id == dataclasses.replace(a, name="renamed").id  # the label is not the identity


def test_round_trip_and_host() -> None:
    one = platforms.get("cpu-native-1t")
    assert one.threads == 1 and one.target["num-cores"] == 1
    p = platforms.get("cpu-native-2t")
    assert one.target["mcpu"] == p.target["mcpu"] and one.id != p.id
    back = platforms.Platform.from_dict(p.to_dict())
    assert back == p and back.id == p.id
    assert p.host.cores >= 1 and p.host.cpu_model
    assert p.target["mcpu"] not in ("", "generic")  # never SSE2-only code by accident


def test_descriptor_of_presets_and_targets() -> None:
    width = len(platforms.DESCRIPTOR_FEATURES)
    seen = {}
    for name in ("cpu-avx2-1t", "cpu-x86-64-1t", "cpu-avx512-2t", "cuda-a100"):
        d = platforms.descriptor(platforms.PRESETS[name][0]())
        assert len(d) == width and set(d) <= {0.0, 1.0}
        seen[name] = d
    named = {
        n: {f for f, v in zip(platforms.DESCRIPTOR_FEATURES, d, strict=True) if v}
        for n, d in seen.items()
    }
    assert named["cpu-avx2-1t"] == {"cpu", "threads=1", "simd256"}
    assert named["cpu-x86-64-1t"] == {"cpu", "threads=1", "simd128"}
    assert named["cpu-avx512-2t"] == {"cpu", "threads=2", "simd512"}
    assert named["cuda-a100"] == {"gpu"}
    # Records carry their target as a JSON string; mattr counts as well as mcpu.
    as_json = '{"kind":"llvm","keys":["cpu"],"num-cores":8,"mcpu":"generic","mattr":["+avx2"]}'
    got = dict(zip(platforms.DESCRIPTOR_FEATURES, platforms.descriptor(as_json), strict=True))
    assert got["threads>=3"] == got["simd256"] == 1.0 and got["simd128"] == 0.0


def test_simd_width_tables_agree_with_llvm() -> None:
    """The CPU tables are a shortcut for LLVM's own answer (no TVM import to read a record's
    descriptor); every name in them must give the width LLVM gives, and a CPU the tables lack
    is asked of LLVM: Arrow Lake and Lunar Lake laptops are AVX2, not SSE."""
    tabled = [(n, 512) for n in platforms._SIMD512_CPUS] + [
        (n, 256) for n in platforms._SIMD256_CPUS
    ]
    assert [(n, platforms._llvm_simd_width(n)) for n, _ in tabled] == tabled

    def simd(mcpu: str, **more: str) -> str:
        d = platforms.descriptor({"kind": "llvm", "mcpu": mcpu, "num-cores": 1, **more})
        [width] = [
            f for f, v in zip(platforms.DESCRIPTOR_FEATURES, d, strict=True) if v and "simd" in f
        ]
        return width

    assert simd("arrowlake") == simd("lunarlake") == "simd256"
    assert simd("skx") == simd("diamondrapids") == "simd512"
    assert simd("btver2") == simd("x86-64") == simd("generic") == "simd128"
    assert simd("no-such-cpu") == "simd128"  # a name LLVM does not know is not guessed at
    assert simd("neoverse-v1", mtriple="aarch64-linux-gnu") == "simd128"
