"""The latency of built networks: tuned and untuned builds, libraries and PyTorch eager, timed in
interleaved rounds (:mod:`timing`) with the machine's load, and the tuned build's output checked
against a reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tcl.tuning.platforms import Platform
from tcl.tuning.timing import (
    THIS_MACHINE,
    LoadMeter,
    MachineLoad,
    Timing,
    interleaved,
    machine_load,
    torch_timer,
    tvm_timer,
)
from tcl.tuning.user_models import UserModel


def time_builds(
    vms: dict[str, Any],
    model: Any,
    inputs: tuple[Any, ...],
    threads: int,
    rounds: int,
    device: Any = None,
) -> tuple[dict[str, Timing], MachineLoad]:
    """Times each relax VM in ``vms`` (on ``device``: this CPU by default, or a remote one) and
    PyTorch eager ("torch", here, with ``threads`` threads, the TVM runtime's count; not when
    ``model`` is None) in interleaved rounds, and the load other processes put on this machine
    before and while they ran (the larger of the two)."""
    import tvm

    before = machine_load()
    meter = LoadMeter().start()
    device = device or tvm.cpu()
    tensors = [tvm.runtime.tensor(x.numpy(), device) for x in inputs]
    timers = {label: tvm_timer(vm, device, tensors) for label, vm in vms.items()}
    if model is not None:
        timers["torch"] = torch_timer(model, tuple(inputs), threads)
    timings = interleaved(timers, rounds)
    during = meter.stop()
    return timings, during if during.other_cores >= before.other_cores else before


def time_library(
    library: str | Path,
    inputs: list[Any],
    model: Any = None,
    *,
    threads: int | None = None,
    rounds: int = 5,
) -> tuple[dict[str, Timing], MachineLoad, int]:
    """A library written by ``tcl tune`` ("library") on ``inputs`` (numpy arrays), and PyTorch
    eager ("torch") when ``model`` is given, timed as :func:`time_builds` times builds, with
    ``threads`` threads each (default: one per core); returns the threads too."""
    import os

    import torch

    threads = threads or os.cpu_count() or 1
    os.environ["TVM_NUM_THREADS"] = str(threads)  # read when TVM's thread pool first starts
    import tvm
    from tvm import relax

    vm = relax.VirtualMachine(tvm.runtime.load_module(str(library)), tvm.cpu())
    tensors = tuple(torch.from_numpy(x) for x in inputs)
    timings, load = time_builds({"library": vm}, model, tensors, threads, rounds)
    return timings, load, threads


def time_interleaved(
    network: str,
    platform: Platform,
    work_dirs: dict[str, str | Path],
    *,
    rounds: int = 5,
    tiny: bool = False,
) -> dict[str, float]:
    """Latency (ms) of ``network`` built from each tuning work directory's database, and of
    PyTorch eager ("torch"), timed round by round in turn (:func:`time_builds`): a drift in the
    machine's state (other load, clocks) then hits every build alike, unlike builds timed minutes
    apart at the end of their own runs. Median over ``rounds``."""
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tcl import zoo
    from tcl.zoo.extract import import_network

    target = platform.tvm_target()
    net = zoo.get(network)
    model: Any = net.factory()
    example: Any = zoo.example_input(net, tiny=tiny)
    mod = import_network(model, example)
    vms = {}
    for label, work in work_dirs.items():
        database = ms.database.JSONDatabase(work_dir=str(work))
        built = ms.relax_integration.compile_relax(database, mod, target, params=None)
        vms[label] = relax.VirtualMachine(built, tvm.cpu())
    timings, _ = time_builds(vms, model, (example,), platform.threads, rounds)
    return {label: t.median for label, t in timings.items()}


def first_output(out: Any) -> Any:
    """The first output of a relax VM's ``main``: exported programs return a tuple (a TVM
    ``Array``), others the tensor itself."""
    return out[0] if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else out


def _upload(
    rpc: tuple[str, int, str], library: Path, untuned_build: Any, cc: str | None
) -> tuple[Any, str, list[Any]]:
    """(device, its description, the tuned and untuned modules loaded there): both libraries
    uploaded to the device behind the RPC tracker."""
    import tempfile

    import tvm

    host, port, key = rpc
    remote = tvm.rpc.connect_tracker(host, port).request(key)
    with tempfile.TemporaryDirectory() as scratch:
        untuned_library = Path(scratch) / "untuned.so"
        untuned_build.export_library(str(untuned_library), cc=cc)
        for path in (library, untuned_library):  # as bytes: TVM leaves a path's file open
            remote.upload(bytearray(path.read_bytes()), target=path.name)
    loaded = [remote.load_module(p.name) for p in (library, untuned_library)]
    return remote.cpu(), f"device {key} (RPC tracker {host}:{port})", loaded


def first_result(vm: Any, inputs: list[Any]) -> Any:
    """``main``'s first output as a numpy array, also from a VM on a remote device (a tuple does
    not cross RPC as a return value: the VM keeps its outputs, fetched one by one)."""
    vm.set_input("main", *inputs)
    vm.invoke_stateful("main")
    return first_output(vm.get_outputs("main")).numpy()


def time_result(
    built: Any,
    library: Path,
    mod: Any,
    target: Any,
    model: UserModel,
    platform: Platform,
    rounds: int,
    rpc: tuple[str, int, str] | None = None,
    cc: str | None = None,
) -> tuple[dict[str, Timing], MachineLoad, float, str]:
    """The tuned build (``built``, written as ``library``) and the untuned build timed
    interleaved with PyTorch eager, the machine's load, the tuned build's largest difference
    from PyTorch's output (from the untuned build's, for a model that came without PyTorch),
    and where the builds ran: this machine, or with ``rpc`` (tracker host, port, device key)
    the device behind the tracker, both libraries uploaded there (``cc``: the compiler that
    links the untuned one)."""
    import torch
    import tvm
    from tvm import relax

    untuned_build = relax.build(mod, target=target)
    if rpc is None:
        device, where, loaded = tvm.cpu(), THIS_MACHINE, [built, untuned_build]
    else:
        device, where, loaded = _upload(rpc, library, untuned_build, cc)
    tuned, untuned = (relax.VirtualMachine(m, device) for m in loaded)
    inputs = [tvm.runtime.tensor(x.numpy(), device) for x in model.inputs]
    first = first_result(tuned, inputs)
    vms = {"tuned": tuned, "untuned": untuned}
    timings, load = time_builds(vms, model.module, model.inputs, platform.threads, rounds, device)
    if model.module is None:
        expected = first_result(untuned, inputs)
    else:
        with torch.no_grad():
            out = model.module.eval()(*model.inputs)
        expected = (out[0] if isinstance(out, (list, tuple)) else out).numpy()
    return timings, load, float(abs(first - expected).max()), where
