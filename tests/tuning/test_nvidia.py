"""NVIDIA GPUs without a GPU: targets of described devices against TVM's own tags, platform ids
of two GPUs, NVRTC from PyPI compiling what a CUDA build generates; with a GPU, the local one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tcl.errors import TclError
from tcl.tuning import nvidia, platforms


def _described(
    name: str, major: int, sms: int, l2_mb: int, memory_gb: float
) -> nvidia.GpuDescription:
    """A GPU as the CUDA driver describes it (cuDeviceGetAttribute): the per-block limits are
    those of every NVIDIA GPU since Volta."""
    return nvidia.GpuDescription(
        name=name,
        major=major,
        minor=0,
        multiprocessors=sms,
        max_threads_per_block=1024,
        max_shared_memory_per_block=49152,
        registers_per_block=65536,
        warp_size=32,
        l2_cache_bytes=l2_mb * 2**20,
        memory_bytes=int(memory_gb * 2**30),
    )


H100 = _described("NVIDIA H100 80GB HBM3", 9, 132, 50, 79.6)
A100 = _described("NVIDIA A100-SXM4-40GB", 8, 108, 40, 39.4)


@pytest.mark.parametrize(
    ("gpu", "tag"), [(H100, "nvidia/nvidia-h100"), (A100, "nvidia/nvidia-a100")]
)
def test_the_target_of_a_described_gpu_is_tvms_tag_for_it(
    gpu: nvidia.GpuDescription, tag: str
) -> None:
    import tvm

    ours = tvm.target.Target(nvidia.cuda_target(gpu)).export()
    theirs = tvm.target.Target(tag).export()
    for key in (
        "kind",
        "keys",
        "arch",
        "max_num_threads",
        "max_threads_per_block",
        "max_shared_memory_per_block",
        "registers_per_block",
        "thread_warp_size",
        "l2_cache_size_bytes",
    ):
        assert ours[key] == theirs[key], key
    assert ours["host"]["kind"] == "llvm"


def test_platforms_of_two_gpus_never_share_an_id() -> None:
    h100, a100 = platforms.cuda_platform(H100), platforms.cuda_platform(A100)
    assert h100.is_cuda and h100.threads == 1 and h100.host.gpu == H100.label
    assert "sm_90a" in h100.host.gpu and "132 SMs" in h100.host.gpu
    assert h100.id == platforms.cuda_platform(H100).id
    assert h100.id != a100.id
    fewer_sms = dataclasses.replace(H100, name=H100.name, multiprocessors=114)
    assert platforms.cuda_platform(fewer_sms).id != h100.id  # same name, another device
    back = platforms.Platform.from_dict(h100.to_dict())
    assert back == h100 and back.id == h100.id
    named = {
        f
        for f, v in zip(
            platforms.DESCRIPTOR_FEATURES, platforms.descriptor(h100.target), strict=True
        )
        if v
    }
    assert named == {"gpu"}


def test_a_gpus_candidates_are_built_by_every_core_of_its_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tcl.tuning.collect import MeasureProtocol

    monkeypatch.setattr(platforms, "usable_cores", lambda: list(range(16)))
    gpu = MeasureProtocol.of(platforms.cuda_platform(H100))
    assert gpu.build_workers == 16 and gpu.repeat == MeasureProtocol().repeat
    assert MeasureProtocol.of(platforms.cuda_platform(H100), build_workers=4).build_workers == 4


def test_a_gpus_search_uses_every_core_of_its_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU's search leaves the small machine to its measurements; a GPU's candidates run on
    the GPU, so the search takes the host's cores."""
    from tcl.integrations.tvm.measure import search_threads

    monkeypatch.setattr("os.cpu_count", lambda: 16)
    assert search_threads(platforms.cuda_platform(H100).tvm_target()) == 16
    assert search_threads(platforms.get("cuda-h100").tvm_target()) == 16
    assert search_threads(platforms.get("cpu-native-1t").tvm_target()) == 2
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert search_threads(platforms.cuda_platform(H100).tvm_target()) == 2


def test_the_local_gpu_preset_describes_this_machines_gpu_or_says_there_is_none() -> None:
    gpu = nvidia.local_gpu()
    if gpu is None:
        with pytest.raises(TclError, match="no NVIDIA GPU is visible here"):
            platforms.get("cuda")
        with pytest.raises(TclError, match="needs an NVIDIA GPU and none is visible here"):
            platforms.get("cuda-h100").require_device()
        platforms.get("cuda-h100").require_device(rpc=("localhost", 9190, "gpu"))
    else:
        local = platforms.get("cuda")
        assert local.host.gpu == gpu.label and local.target["arch"] == gpu.arch
        local.require_device()
    platforms.get("cpu-native-1t").require_device()  # a CPU needs nothing


def test_the_pip_toolkit_is_used_where_no_cuda_toolkit_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    toolkit = nvidia.pip_toolkit()
    assert toolkit is not None, "the test extra installs nvidia-cuda-runtime"
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("TVM_CUDA_NVRTC_EXTRA_OPTS", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    assert nvidia.use_pip_toolkit() == toolkit
    import os

    assert os.environ["CUDA_PATH"] == str(toolkit)
    assert (Path(os.environ["CUDA_PATH"]) / "include" / "cuda_runtime.h").is_file()
    assert f"-I{toolkit / 'include' / 'cccl'}" in os.environ["TVM_CUDA_NVRTC_EXTRA_OPTS"]
    monkeypatch.setenv("CUDA_PATH", "/opt/cuda")
    assert nvidia.use_pip_toolkit() is None  # a toolkit the user named stays


@pytest.mark.tvm
def test_a_cuda_tasks_candidates_build_and_compile_to_cubins(tmp_path: Path) -> None:
    """The tuner's path up to the GPU: a CUDA task's design space, candidates built by the
    measurement workers, their CUDA compiled by NVRTC for the GPU's architecture."""
    import tvm
    from tvm import te

    from tcl.integrations.tvm import measure as tm

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, b, c])})
    target = tvm.target.Target(nvidia.cuda_target(H100))
    candidates = tm.random_candidates(mod, target, 2, seed=0)
    assert candidates
    builder = tm.PersistentLocalBuilder(max_workers=1)
    try:
        batch = tm.build(builder, candidates, target)
    finally:
        tm.shutdown(builder)
    assert not batch.failures and all(i.device_type == "cuda" for i in batch.inputs)
    tm.cleanup(batch)
    built = tvm.compile(candidates[0].sch.mod, target=target)
    (source,) = nvidia.cuda_sources(built)
    assert "__global__" in source and "threadIdx" in source
    cubin = nvidia.compile_cuda(source, H100.arch)
    assert cubin[:4] == b"\x7fELF"  # a loadable cubin, not PTX text
    with pytest.raises(TclError, match="NVRTC could not compile"):
        nvidia.compile_cuda(source + "\nthis is not CUDA;\n", H100.arch)


@pytest.mark.tvm
def test_the_base_model_scores_a_cuda_tasks_candidates() -> None:
    """tcl's cost model ranks GPU programs as it ranks CPU ones: the C++ core tokenizes their
    traces (thread bindings, shared-memory stages) and the target gives the GPU descriptor."""
    import numpy as np
    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.adapter import CostModel, candidate_records

    a = te.placeholder((1, 256, 256), name="A")
    k = te.reduce_axis((0, 256), name="k")
    s = te.compute((1, 256), lambda b, i: te.sum(a[b, i, k], axis=k), name="S")
    mod = tvm.IRModule({"main": te.create_prim_func([a, s])})
    target = tvm.target.Target(nvidia.cuda_target(H100))
    candidates = tm.random_candidates(mod, target, 16, seed=0)
    model = CostModel.from_checkpoint()
    records = candidate_records(candidates, target, model.vocab, model.tokenizer)
    assert (records.lengths > 0).all()
    descriptor = platforms.descriptor(records.targets[0])
    assert descriptor[platforms.DESCRIPTOR_FEATURES.index("gpu")] == 1.0
    context = ms.TuneContext(mod=mod, target=target, task_name="sum")
    scores = model.predict(context, candidates)
    assert scores.shape == (len(candidates),) and np.isfinite(scores).all()
    assert len(np.unique(np.round(scores, 6))) > 1  # programs told apart


@pytest.mark.tvm
def test_a_network_builds_for_cuda_tuned_and_untuned(tmp_path: Path) -> None:
    """A zoo network built for a GPU as ``tcl tune`` builds it (the database's programs, and
    relax's default GPU schedules for the rest and for the untuned build), written as a
    library, its kernels compiled by NVRTC."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tcl import zoo
    from tcl.tuning.compile import compile_tuned
    from tcl.zoo.extract import extracted_tasks, import_network

    net = zoo.get("bert_tiny")
    example = zoo.example_input(net, tiny=True)
    mod = import_network(zoo.module(net, example), example)
    target = tvm.target.Target(nvidia.cuda_target(A100))
    assert extracted_tasks(mod, target)
    tuned = compile_tuned(ms.database.MemoryDatabase(), mod, target)
    untuned = relax.build(mod, target=target)
    for built in (tuned, untuned):
        assert nvidia.runs_on_gpu(built)
        built.export_library(str(tmp_path / "net.so"))
        (source,) = nvidia.cuda_sources(built)
        assert nvidia.compile_cuda(source, A100.arch)[:4] == b"\x7fELF"
    assert not nvidia.runs_on_gpu(relax.build(mod, target=tvm.target.Target("llvm")))


@pytest.mark.gpu
@pytest.mark.slow
def test_tune_on_the_local_gpu(tmp_path: Path) -> None:
    """On a machine with a GPU: a short ``tcl tune --platform cuda`` measures on it, builds,
    and times the library beside PyTorch eager on the same GPU."""
    if nvidia.local_gpu() is None:
        pytest.skip("no NVIDIA GPU here")
    import json

    from tcl.cli import main

    report = tmp_path / "report.json"
    argv = ["tune", "--network", "bert_tiny", "--tiny", "--platform", "cuda", "--trials", "16"]
    assert main([*argv, "--work-dir", str(tmp_path), "--json", str(report), "--quiet"]) == 0
    figures = json.loads(report.read_text())
    assert figures["latency_ms"] > 0 and figures["torch_ms"] > 0 and figures["measured"] >= 8
    assert figures["max_abs_error"] < 1e-2
    # every task's untuned kernel was measured first: the estimate starts at trial 0
    from tcl.tuning.untuned import load_untuned

    assert len(load_untuned(tmp_path)) == figures["tasks"]
    assert figures["curve"][0]["trial"] == 0
    assert 0 <= figures["dlight_tasks"] <= figures["tasks"]
