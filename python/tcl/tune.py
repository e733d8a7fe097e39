"""``tcl tune``: tune a whole zoo network with MetaSchedule, guided by a chosen cost model, then
build it and compare its latency with the untuned build and with PyTorch.

The flow is stock apache-tvm (``tune_tasks`` → ``compile_relax``) with this machine's fixes:
persistent build workers, synchronous measurement, ``mcpu`` always set, zero-FLOP tasks left
out, and a per-task batch small enough that every task gets trials (DESIGN.md §7).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tcl.platforms import Platform


@dataclass
class TuneReport:
    network: str
    platform: str
    cost_model: str
    trials: int
    tasks: int
    tune_seconds: float
    latency_ms: float
    untuned_ms: float
    torch_ms: float
    max_abs_error: float
    curve: list[dict[str, float]] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"{self.network} on {self.platform}: {self.trials} trials over {self.tasks} tasks with "
            f"the {self.cost_model} cost model in {self.tune_seconds:.0f} s",
            f"latency {self.latency_ms:.3f} ms; untuned {self.untuned_ms:.3f} ms "
            f"({self.untuned_ms / self.latency_ms:.1f}x); PyTorch {self.torch_ms:.3f} ms "
            f"({self.torch_ms / self.latency_ms:.2f}x); "
            f"max |tuned - torch| {self.max_abs_error:.2e}",
        ]


def make_cost_model(kind: str, model_path: str | None) -> Any:
    if kind == "tcl":
        from tcl.tvm import CostModel

        return CostModel.from_checkpoint(model_path)  # None: the packaged base model
    if kind == "mlp":
        from tcl.integrations.tvm_patches import fixed_mlp_model

        model = fixed_mlp_model()
        if model_path:  # a pre-trained state (MLPModel.save), e.g. from bench/bench_tune.py
            model.load(model_path)
        return model
    if kind == "xgb":
        from tvm.s_tir import meta_schedule as ms

        return ms.cost_model.XGBModel(num_tuning_cores=2)
    if kind == "random":
        return "random"
    raise ValueError(f"unknown cost model {kind!r} (tcl, xgb, mlp, random)")


def _latency_ms(vm: Any, device: Any, inp: Any) -> float:
    """Median of 5 repeats of >= 100 ms each; a module slower than 50 ms (an untuned build can
    take seconds) gets 3 single runs instead, which are precise enough at that scale."""
    once = float(vm.time_evaluator("main", device, number=1, repeat=1)(inp).median)
    if once > 0.05:
        timer = vm.time_evaluator("main", device, number=1, repeat=3)
    else:
        timer = vm.time_evaluator("main", device, number=10, repeat=5, min_repeat_ms=100)
    return float(timer(inp).median) * 1e3


def _torch_ms(model: Any, example: Any, threads: int) -> float:
    """PyTorch eager's mean latency over >= 0.5 s and >= 5 runs."""
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        model.eval()(example)
        start = time.perf_counter()
        runs = 0
        while time.perf_counter() - start < 0.5 or runs < 5:
            model(example)
            runs += 1
    return (time.perf_counter() - start) / runs * 1e3


def time_interleaved(
    network: str,
    platform: Platform,
    work_dirs: dict[str, str | Path],
    *,
    rounds: int = 5,
    tiny: bool = False,
) -> dict[str, float]:
    """Latency (ms) of ``network`` built from each tuning work directory's database, and of
    PyTorch eager ("torch"), timed round by round in turn: a drift in the machine's state (other
    load, clocks) then hits every build alike, unlike builds timed minutes apart at the end of
    their own runs. Median over ``rounds``."""
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
    device = tvm.cpu()
    inp = tvm.runtime.tensor(example.numpy(), device)
    vms = {}
    for label, work in work_dirs.items():
        database = ms.database.JSONDatabase(work_dir=str(work))
        built = ms.relax_integration.compile_relax(database, mod, target, params=None)
        vms[label] = relax.VirtualMachine(built, device)
    times: dict[str, list[float]] = {label: [] for label in [*vms, "torch"]}
    for _ in range(rounds):
        for label, vm in vms.items():
            times[label].append(_latency_ms(vm, device, inp))
        times["torch"].append(_torch_ms(model, example, platform.threads))
    return {label: float(np.median(values)) for label, values in times.items()}


def _curve(
    work_dir: Path, weights: dict[str, float], batches: list[tuple[float, int]], start: float
) -> list[dict[str, float]]:
    """Estimated network latency (sum over tasks of weight x best mean cost so far) after each
    measured trial, in measurement order (the database file is append-only), from the first
    trial at which every task has a measured program; with the wall time since the start of
    tuning at which the runner finished that trial's batch. Trials whose build failed never
    reach the runner; their times are matched by position (pro rata)."""
    from tcl.records import read_records

    rs = read_records(work_dir)
    ends = np.repeat([t - start for t, _ in batches], [n for _, n in batches])
    best: dict[str, float] = {}
    out = []
    for i in range(len(rs)):
        key = rs.tasks.workload_key[int(rs.columns["task"][i])]
        cost = float(rs.columns["mean_cost"][i])
        if rs.columns["error"][i] == 0 and cost < best.get(key, float("inf")):
            best[key] = cost
        if len(best) < len(weights):
            continue  # the estimate means something once every task has a measured program
        estimate = sum(weights[k] * v for k, v in best.items() if k in weights)
        at = int(i * len(ends) / len(rs)) if len(ends) else -1
        seconds = float(ends[at]) if at >= 0 else float("nan")
        out.append({"trial": i + 1, "seconds": round(seconds, 2), "estimated_ms": estimate * 1e3})
    return out


def plot_curves(reports: list[TuneReport], path: str | Path, title: str = "") -> None:
    """Best estimated latency against trials and against wall time, one line per report."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_trial, by_time) = plt.subplots(1, 2, figsize=(10, 4))
    for report in reports:
        label = f"{report.network} / {report.cost_model}"
        trials = [p["trial"] for p in report.curve]
        seconds = [p["seconds"] for p in report.curve]
        latency = [p["estimated_ms"] for p in report.curve]
        by_trial.plot(trials, latency, label=label)
        by_time.plot(seconds, latency, label=label)
    for ax, xlabel in ((by_trial, "measured trials"), (by_time, "tuning wall time (s)")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("best estimated latency (ms)")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    by_trial.legend(fontsize=8)
    fig.suptitle(title or "tcl tune")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tune_network(
    network: str,
    platform: Platform,
    trials: int,
    work_dir: str | Path,
    *,
    cost_model: str = "xgb",
    model_path: str | None = None,
    tiny: bool = False,
    seed: int = 0,
    rpc: tuple[str, int, str] | None = None,
) -> TuneReport:
    """Tunes ``network`` and measures the result. With ``rpc`` (tracker host, port, device key)
    the tuner measures candidates on the device behind the tracker; the final timing of the
    built network (and PyTorch's) runs on this machine."""
    import torch
    import tvm
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tcl import zoo
    from tcl.integrations import tvm_measure as tm  # patches inspect before tvm loads
    from tcl.zoo.extract import extracted_tasks, import_network

    target = platform.tvm_target()
    net = zoo.get(network)
    model: Any = net.factory()
    example: Any = zoo.example_input(net, tiny=tiny)
    mod = import_network(model, example)
    extracted = extracted_tasks(mod, target)
    # Every task gets about four rounds of search: the estimated network latency exists only
    # once every task has a measurement, so a short first round makes it (and the tuning
    # curves) start early, and each round refits the cost model on more data. At least two
    # candidates per round where the budget allows, so that one failed build does not leave a
    # task without a measurement.
    tasks = max(1, len(extracted))
    per_iter = max(1, min(16, max(trials // (4 * tasks), min(2, trials // tasks))))
    contexts, weights = ms.relax_integration.extracted_tasks_to_tune_contexts(
        extracted,
        str(work_dir),
        strategy=ms.search_strategy.EvolutionarySearch(population_size=128),
        num_threads=2,
        seed=seed,
    )
    evaluator = tm.EvaluatorConfig(number=1, repeat=3, min_repeat_ms=20)
    builder = tm.PersistentLocalBuilder(2, 60.0)
    inner = tm.make_runner(evaluator, 30.0, rpc=rpc, threads=platform.threads)
    runner = tm.SyncRunner(inner)
    start = time.time()
    try:
        database = ms.tune_tasks(
            tasks=contexts,
            task_weights=weights,
            work_dir=str(work_dir),
            max_trials_global=trials,
            num_trials_per_iter=per_iter,
            builder=builder,
            runner=runner,
            cost_model=make_cost_model(cost_model, model_path),
        )
    finally:
        tm.shutdown(builder, inner)
    tune_seconds = time.time() - start
    device = tvm.cpu()
    inp = tvm.runtime.tensor(example.numpy(), device)
    tuned = relax.VirtualMachine(
        ms.relax_integration.compile_relax(database, mod, target, params=None), device
    )
    untuned = relax.VirtualMachine(relax.build(mod, target=target), device)
    out = tuned["main"](inp)
    first = out[0] if isinstance(out, (list, tuple)) or type(out).__name__ == "Array" else out
    torch_ms = _torch_ms(model, example, platform.threads)
    with torch.no_grad():
        expected = model.eval()(example)
    error = float(abs(first.numpy() - expected.numpy()).max())
    weight_by_key = {
        str(ms.database.Workload(t.dispatched[0]).as_json()[0]): float(t.weight) for t in extracted
    }
    return TuneReport(
        network,
        platform.name,
        cost_model,
        trials,
        len(extracted),
        tune_seconds,
        _latency_ms(tuned, device, inp),
        _latency_ms(untuned, device, inp),
        torch_ms,
        error,
        _curve(Path(work_dir), weight_by_key, runner.batches, start),
    )


def write_report(report: TuneReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(asdict(report), indent=1))
