"""Platforms: presets, ids that separate hosts and settings, round trips."""

from __future__ import annotations

import dataclasses

import pytest

from tcl import platforms


def test_presets_resolve() -> None:
    for name in platforms.PRESETS:
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
    p = platforms.get("cpu-native-2t")
    back = platforms.Platform.from_dict(p.to_dict())
    assert back == p and back.id == p.id
    assert p.host.cores >= 1 and p.host.cpu_model
    assert p.target["mcpu"] not in ("", "generic")  # never SSE2-only code by accident
