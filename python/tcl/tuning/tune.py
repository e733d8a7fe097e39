"""``tcl tune``: tune a model with MetaSchedule, guided by a chosen cost model, then build it,
write the deployable library and compare its latency with the untuned build and with PyTorch.

The flow is stock apache-tvm (``tune_tasks`` → ``compile_relax``) with this machine's fixes:
persistent build workers, synchronous measurement, ``mcpu`` always set, zero-FLOP tasks left
out, and a per-task batch small enough that every task gets trials.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tcl.integrations.tvm.console import native_stderr_to
from tcl.integrations.tvm.patches import enters_tvm
from tcl.tuning.compile import as_tuned
from tcl.tuning.curves import estimate_curve, plot_curves
from tcl.tuning.latency import time_result
from tcl.tuning.layout import has_conv2d
from tcl.tuning.options import (
    COST_MODELS,
    DEFAULT_COST_MODELS,
    DEFAULT_POPULATION,
    DEFAULT_TRIALS,
    DEFAULT_WORK_DIR,
    TuneOptions,
)
from tcl.tuning.platforms import Platform
from tcl.tuning.report import TuneReport, write_report
from tcl.tuning.tune_search import Search, trials_per_round
from tcl.tuning.user_models import UserModel


def tune(
    model: Any,
    example_inputs: Any = (),
    *,
    platform: str | Platform | None = None,
    trials: int | None = None,
    work_dir: str | Path = DEFAULT_WORK_DIR,
    name: str | None = None,
    **options: Any,
) -> TuneReport:
    """Tunes what a Python caller has: a ``torch.nn.Module`` with its example inputs, a
    ``torch.export.ExportedProgram``, or a spec string as ``tcl tune MODEL`` takes, on
    ``platform`` (a preset name or a :class:`Platform`; default: this CPU), writing
    ``WORK_DIR/<name>.so``. ``trials``: :data:`DEFAULT_TRIALS`, or :data:`TIMED_TRIALS` as a
    bound under a time budget (``minutes``), which also makes each task's first round a quick
    one of :data:`~tcl.tuning.options.TIMED_FIRST_ROUND` unless ``first_round`` is given;
    ``options``: the fields of :class:`TuneOptions`. A ``RuntimeWarning`` says when the built
    network's output is not the model's (:meth:`TuneReport.output_warning`).

    >>> report = tcl.tune(net, (x,), trials=64, work_dir="net-tune")
    >>> report.library, report.latency_ms, report.torch_ms
    """
    from tcl.tuning import platforms
    from tcl.tuning.user_models import as_user_model

    if not isinstance(platform, Platform):
        platform = platforms.get(platform or platforms.DEFAULT_PLATFORM)
    user = as_user_model(model, example_inputs, name)
    report = tune_model(user, platform, work_dir, TuneOptions.of(trials, **options))
    wrong = report.output_warning()
    if wrong:  # the library was written; the caller hears it computes something else
        warnings.warn(wrong.removeprefix("warning: "), RuntimeWarning, stacklevel=2)
    return report


def tune_network(
    network: str,
    platform: Platform,
    trials: int,
    work_dir: str | Path,
    *,
    tiny: bool = False,
    **options: Any,
) -> TuneReport:
    """:func:`tune_model` on a zoo network (``tiny``: its small test input); ``options``: the
    fields of :class:`TuneOptions`, exactly as given (its defaults, not :meth:`TuneOptions.of`'s:
    no quick first round under a time budget unless ``first_round`` asks; the benchmarks name
    every variant this way)."""
    from tcl.tuning.user_models import load_model

    user = load_model(network, tiny=tiny)
    return tune_model(user, platform, work_dir, TuneOptions(trials=trials, **options))


@enters_tvm
def tune_model(
    model: UserModel, platform: Platform, work_dir: str | Path, options: TuneOptions
) -> TuneReport:
    """Tunes ``model`` (:mod:`user_models`) as ``options`` say, measures the result and writes
    the deployable library ``WORK_DIR/<name>.so`` with a README.txt saying how to run it. A work
    directory tuned before is resumed: its database stays, the search starts from its best
    programs, and ``options.trials`` more programs, none of them in the database, are measured.
    With ``options.rpc`` the tuner measures candidates on the device behind the tracker, and
    the tuned and untuned libraries are uploaded and timed there (PyTorch eager runs here). The
    builds are timed in ``options.rounds`` fresh processes (:mod:`tcl.tuning.isolated`; on an
    RPC device, interleaved rounds), PyTorch eager beside them. MetaSchedule's log and what
    TVM's C++ code prints go to WORK_DIR/logs, and also to the terminal when
    ``options.verbose``."""
    from tcl.records.store import WriterLock

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    _lock = WriterLock(work, "a tuning work directory")  # held until this call returns
    native_log = None if options.verbose else work / "logs" / "tvm_native.log"
    with native_stderr_to(native_log):
        return _tune_locked(model, platform, work, options)


def _tune_locked(
    model: UserModel, platform: Platform, work: Path, options: TuneOptions
) -> TuneReport:
    """:func:`tune_model` once the work directory is held."""
    from tcl.integrations.tvm.measure import device_kind
    from tcl.tuning.compile import compile_tuned
    from tcl.tuning.untuned import tuned_tasks, tuned_where_faster, untuned_seconds

    platform.require_device(options.rpc)
    target = platform.tvm_target()
    device = device_kind(target)
    options = options.on_device(device)  # the report names the model that ran
    # the workers' processes start while the tasks are made
    workers = Search(options).start_workers(platform)
    try:
        imported = model.relax_module()
        # and the convolution layout: the platform's, unless named or without a convolution
        options = options.on_target(platform.target, convolutions=has_conv2d(imported))
        search = Search(options)
        mod, extracted = module_tasks(imported, target, options)
        earlier = _trials_in(work)  # a work directory tuned before is resumed: its trials stay
        begin, untuned, untuned_at, dlight_tasks = time.time(), {}, 0.0, 0
        if device == "cuda":  # each task's dlight kernel, before the search
            untuned = untuned_seconds(extracted, target, *workers.result(), work)
            untuned_at = time.time() - begin
    except BaseException:
        Search.stop_workers(workers)
        raise
    database, batches, start, tune_seconds = search.run(extracted, work, platform, workers=workers)
    if untuned:  # the tuning began with them; tasks whose tuned programs are slower than
        start, tune_seconds = begin, tune_seconds + start - begin  # dlight's are left to it
        database = tuned_where_faster(database, untuned)
        dlight_tasks = len(extracted) - tuned_tasks(database)
    built = compile_tuned(database, mod, target, weight_prepack=options.weight_prepack)
    library = write_library(built, work, model, options.cc, device)
    timings, load, check, where = time_result(
        library, mod, target, model, platform, options.rounds, options.rpc, options.cc
    )
    return TuneReport(
        network=model.name,
        platform=platform.name,
        tasks=len(extracted),
        tune_seconds=tune_seconds,
        latency_ms=timings["tuned"].median,
        untuned_ms=timings["untuned"].median,
        torch_ms=timings["torch"].median if "torch" in timings else None,
        max_abs_error=check.tuned_error,
        curve=estimate_curve(
            work, task_weights(extracted), batches, start, earlier, untuned, untuned_at
        ),
        samples_ms={label: t.samples_ms for label, t in timings.items()},
        threads=platform.threads,
        machine_load=asdict(load),
        library=str(library),
        builds_timed_on=where,
        options=options.saved(),
        measured=_trials_in(work) - earlier,
        dlight_tasks=dlight_tasks,
        untuned_max_abs_error=check.untuned_error,
        output_scale=check.scale,
    )


def network_tasks(model: UserModel, target: Any, options: TuneOptions) -> tuple[Any, list[Any]]:
    """The network as it is tuned and built (its Relax module, :func:`as_tuned` by ``options``)
    and its tasks for ``target``."""
    return module_tasks(model.relax_module(), target, options)


def module_tasks(imported: Any, target: Any, options: TuneOptions) -> tuple[Any, list[Any]]:
    """:func:`network_tasks` of a network's Relax module as it was imported."""
    from tcl.zoo.extract import extracted_tasks

    mod = as_tuned(imported, options)
    return mod, extracted_tasks(mod, target, weight_prepack=options.weight_prepack)


def task_weights(extracted: list[Any]) -> dict[str, float]:
    """How often each extracted task runs in the network, by its workload's structural hash."""
    from tcl.integrations.tvm.measure import workload_key

    return {workload_key(t.dispatched[0]): float(t.weight) for t in extracted}


def _trials_in(work: Path) -> int:
    """Trials measured in ``work`` by earlier runs (MetaSchedule's database there)."""
    from tcl.records import read_records

    if not any(work.glob("*tuning_record*.json")):
        return 0
    return len(read_records(work))


def write_library(
    built: Any, work: Path, model: UserModel, cc: str | None = None, device: str = "cpu"
) -> Path:
    """``WORK_DIR/<name>.so`` (the relax VM executable, linked by ``cc``: default, the system's
    c++) and a README.txt on running it on ``device`` ("cpu" or "cuda")."""
    library = work / f"{model.name}.so"
    built.export_library(str(library), cc=cc)
    shapes = ", ".join(
        f"{tuple(x.shape)} {str(x.dtype).replace('torch.', '')}" for x in model.inputs
    )
    (work / "README.txt").write_text(
        f"{library.name}: {model.name} tuned by tcl; inputs {shapes}.\n"
        "Run it with stock TVM (apache-tvm) and numpy:\n\n"
        "    import numpy as np, tvm\n"
        "    from tvm import relax\n"
        f"    dev = tvm.{'cuda(0)' if device == 'cuda' else 'cpu()'}\n"
        f"    vm = relax.VirtualMachine(tvm.runtime.load_module('{library.name}'), dev)\n"
        "    out = vm['main'](*[tvm.runtime.tensor(x, dev) for x in inputs])  # numpy arrays in\n"
        "    first = (out if hasattr(out, 'numpy') else out[0]).numpy()  # a tensor or a tuple\n\n"
        f"or: tcl run {library.name} --input x.npy [--input ...] --output y.npy\n"
    )
    return library


__all__ = [
    "COST_MODELS",
    "DEFAULT_COST_MODELS",
    "DEFAULT_POPULATION",
    "DEFAULT_TRIALS",
    "DEFAULT_WORK_DIR",
    "Search",
    "TuneOptions",
    "TuneReport",
    "network_tasks",
    "plot_curves",
    "trials_per_round",
    "tune",
    "tune_model",
    "tune_network",
    "write_library",
    "write_report",
]
