"""The latency of built networks: tuned and untuned builds, libraries and PyTorch eager, timed in
fresh processes (:mod:`isolated`) on this machine, or in interleaved rounds (:mod:`timing`) on a
remote device, with the machine's load, and the tuned build's output checked against a
reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tcl.tuning.compile import as_tuned
from tcl.tuning.isolated import DEFAULT_PROCESSES, time_in_processes
from tcl.tuning.options import TuneOptions
from tcl.tuning.output_check import OutputCheck
from tcl.tuning.platforms import Platform
from tcl.tuning.timing import (
    THIS_MACHINE,
    LoadMeter,
    MachineLoad,
    Timing,
    busier,
    interleaved,
    machine_load,
    torch_timer,
    tvm_timer,
)
from tcl.tuning.user_models import EagerSource, UserModel


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
    return timings, busier(before, meter.stop())


def time_library(
    library: str | Path,
    inputs: list[Any],
    model: UserModel | None = None,
    *,
    threads: int | None = None,
    rounds: int = DEFAULT_PROCESSES,
) -> tuple[dict[str, Timing], MachineLoad, int]:
    """A library written by ``tcl tune`` ("library") on ``inputs`` (numpy arrays) timed in
    ``rounds`` fresh processes (:mod:`isolated`), and PyTorch eager ("torch") on the same
    inputs when ``model`` is given, with ``threads`` threads each (default: one per core);
    returns the threads too."""
    import os

    threads = threads or os.cpu_count() or 1
    timings, load = time_in_processes(
        {"library": library},
        inputs,
        threads=threads,
        processes=rounds,
        **eager_timing(model, threads),
    )
    return timings, load, threads


def eager_timing(model: UserModel | None, threads: int, device: str = "cpu") -> dict[str, Any]:
    """How :func:`time_in_processes` times ``model`` in PyTorch eager on ``device``: in fresh
    processes when it can be loaded again, else here; not at all without a model or a PyTorch
    module."""
    if model is None or model.module is None:
        return {}
    if model.source is not None:
        return {"eager": model.source}
    return {"eager_timer": torch_timer(model.module, model.inputs, threads, device)}


def time_interleaved(
    network: str,
    platform: Platform,
    work_dirs: dict[str, str | Path],
    *,
    rounds: int = DEFAULT_PROCESSES,
    tiny: bool = False,
    options: TuneOptions | None = None,
) -> dict[str, float]:
    """Latency (ms) of ``network`` built from each tuning work directory's database, and of
    PyTorch eager ("torch"), by :func:`time_network`: the median over ``rounds`` processes.
    ``options``: how the directories were tuned (default: as ``TuneOptions()`` tunes), so that
    each is rebuilt as its run built it (:func:`tcl.tuning.compile.as_tuned`)."""
    import tempfile

    from tcl.zoo.extract import import_network

    model, example = _zoo_model(network, tiny)
    options = options or TuneOptions()
    mod = as_tuned(import_network(model, example), options)
    target = platform.tvm_target()
    packed = options.weight_prepack
    with tempfile.TemporaryDirectory(prefix="tcl-builds-") as scratch:
        libraries = {
            label: build_library(
                work, mod, target, Path(scratch) / f"{label}.so", weight_prepack=packed
            )
            for label, work in work_dirs.items()
        }
        timings, _ = time_network(network, platform, libraries, processes=rounds, tiny=tiny)
    return {label: t.median for label, t in timings.items()}


def build_library(
    database_dir: str | Path, mod: Any, target: Any, path: Path, *, weight_prepack: bool = False
) -> Path:
    """``mod`` built with the best programs of the MetaSchedule database in ``database_dir``
    and written to ``path`` (a relax VM executable, as ``tcl tune`` writes); ``weight_prepack``
    as the database was tuned. Where a GPU run kept its untuned kernels' times beside the
    database, the tasks whose programs are slower are left to dlight, as ``tcl tune`` builds."""
    from tvm.s_tir import meta_schedule as ms

    from tcl.tuning.compile import compile_tuned
    from tcl.tuning.untuned import load_untuned, tuned_where_faster

    database = ms.database.JSONDatabase(work_dir=str(database_dir))
    untuned = load_untuned(database_dir)
    if untuned:
        database = tuned_where_faster(database, untuned)
    built = compile_tuned(database, mod, target, weight_prepack=weight_prepack)
    built.export_library(str(path))
    return path


def time_network(
    network: str,
    platform: Platform,
    libraries: dict[str, Path],
    *,
    processes: int = DEFAULT_PROCESSES,
    tiny: bool = False,
) -> tuple[dict[str, Timing], MachineLoad]:
    """Libraries of the zoo's ``network`` (relax VM executables) timed in ``processes`` fresh
    processes each, in shuffled order (:mod:`isolated`), with PyTorch eager ("torch") in a
    fresh process each round: builds made or timed at different moments, or in processes, are
    compared under the same protocol."""
    from tcl import zoo
    from tcl.integrations.tvm.measure import device_kind

    example = zoo.example_input(zoo.get(network), tiny=tiny)
    return time_in_processes(
        libraries,
        [example.numpy()],  # type: ignore[attr-defined]
        threads=platform.threads,
        processes=processes,
        eager=EagerSource(network, tiny),
        device=device_kind(platform.tvm_target()),
    )


def _zoo_model(network: str, tiny: bool) -> tuple[Any, Any]:
    from tcl import zoo

    net = zoo.get(network)
    example = zoo.example_input(net, tiny=tiny)
    return zoo.module(net, example), example


def first_output(out: Any) -> Any:
    """The first output of a relax VM's ``main``: exported programs return a tuple (a TVM
    ``Array``), others the tensor itself."""
    return out[0] if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else out


def _upload(
    rpc: tuple[str, int, str], library: Path, untuned_build: Any, cc: str | None, kind: str
) -> tuple[Any, str, list[Any]]:
    """(device, its description, the tuned and untuned modules loaded there): both libraries
    uploaded to the device behind the RPC tracker, whose GPU or CPU (``kind``) runs them."""
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
    return remote.device(kind), f"device {key} (RPC tracker {host}:{port})", loaded


def first_result(vm: Any, inputs: list[Any]) -> Any:
    """``main``'s first output as a numpy array, also from a VM on a remote device (a tuple does
    not cross RPC as a return value: the VM keeps its outputs, fetched one by one)."""
    vm.set_input("main", *inputs)
    vm.invoke_stateful("main")
    return first_output(vm.get_outputs("main")).numpy()


def time_result(
    library: Path,
    mod: Any,
    target: Any,
    model: UserModel,
    platform: Platform,
    rounds: int,
    rpc: tuple[str, int, str] | None = None,
    cc: str | None = None,
) -> tuple[dict[str, Timing], MachineLoad, OutputCheck, str]:
    """The tuned ``library`` and the untuned build timed beside PyTorch eager, the machine's
    load, both builds' outputs checked against PyTorch's (the tuned build's against the untuned
    build's, for a model that came without PyTorch), and where the builds ran. On this machine
    both libraries are timed in ``rounds`` fresh processes (:mod:`isolated`); with ``rpc``
    (tracker host, port, device key) both are uploaded to the device behind the tracker and
    timed there in interleaved rounds (``cc``: the compiler that links the untuned one)."""
    import tempfile

    import tvm
    from tvm import relax

    from tcl.integrations.tvm.measure import device_kind

    untuned_build = relax.build(mod, target=target)  # relax's default GPU schedules (dlight)
    kind = device_kind(target)
    with tempfile.TemporaryDirectory(prefix="tcl-untuned-") as scratch:
        libraries: dict[str, Path] | None = None
        # Checked as the files that are timed: a build held in memory would be compiled again
        # by LLVM's JIT to run here (seconds each on a large network).
        if rpc is None:
            libraries = {"tuned": library, "untuned": Path(scratch) / "untuned.so"}
            untuned_build.export_library(str(libraries["untuned"]), cc=cc)
            loaded = [tvm.runtime.load_module(str(path)) for path in libraries.values()]
            device, where = tvm.device(kind), THIS_MACHINE
        else:
            device, where, loaded = _upload(rpc, library, untuned_build, cc, kind)
        tuned, untuned = (relax.VirtualMachine(m, device) for m in loaded)
        timings, load, check = _checked_and_timed(
            tuned, untuned, model, platform, rounds, device, kind, libraries
        )
    return timings, load, check, where


def _checked_and_timed(
    tuned: Any,
    untuned: Any,
    model: UserModel,
    platform: Platform,
    rounds: int,
    device: Any,
    kind: str,
    libraries: dict[str, Path] | None,
) -> tuple[dict[str, Timing], MachineLoad, OutputCheck]:
    """Both VMs' outputs checked, then the builds timed: the ``libraries`` in fresh processes
    on this machine, PyTorch eager beside them (:func:`_eager`), or (None) the VMs where they
    are, on a remote device."""
    import torch
    import tvm

    inputs = [tvm.runtime.tensor(x.numpy(), device) for x in model.inputs]
    first, untuned_first = first_result(tuned, inputs), first_result(untuned, inputs)
    if model.module is None:
        check = OutputCheck.of(first, untuned_first)
    else:
        with torch.no_grad():
            out = model.module.eval()(*model.inputs)
        expected = (out[0] if isinstance(out, (list, tuple)) else out).numpy()
        check = OutputCheck.of(first, expected, untuned_first)
    if libraries is None:
        vms = {"tuned": tuned, "untuned": untuned}
        timings, load = time_builds(
            vms, model.module, model.inputs, platform.threads, rounds, device
        )
    else:
        timings, load = time_in_processes(
            libraries,
            [x.numpy() for x in model.inputs],
            threads=platform.threads,
            processes=rounds,
            device=kind,
            **eager_timing(model, platform.threads, kind),
        )
    return timings, load, check
