"""What a tuning run reports: the built network's latency beside the untuned build and PyTorch
eager (medians and every sample: one per fresh timing process), the estimated latency after
every trial, and its plot. Written as WORK_DIR/report.json and report.png by ``tcl tune``."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from tcl._format import counted
from tcl.integrations.tvm.console import estimated_ms
from tcl.tuning.isolated import ONE_PROCESS_MS
from tcl.tuning.options import DEFAULT_POPULATION, LATER_ROUND_ITERS, TuneOptions
from tcl.tuning.output_check import OutputCheck
from tcl.tuning.timing import THIS_MACHINE, MachineLoad, Timing, speedup_text

# how the report's header says the round of transplants was shared (``transplant_allot``)
TRANSPLANT_SHARING = {
    "time": " a task, shared by time",
    "time-exact": " a task, shared by time, more only of those that keep every tile decision",
}


@dataclass
class TuneReport:
    network: str
    platform: str
    tasks: int
    tune_seconds: float
    latency_ms: float
    untuned_ms: float
    torch_ms: float | None  # None: the model came without PyTorch (ONNX, a relax module)
    max_abs_error: float  # the tuned build's output against PyTorch's (else the untuned build's)
    curve: list[dict[str, float]] = field(default_factory=list)
    # Samples (ms) of "tuned", "untuned" and "torch": one per fresh timing process (tcl.tuning.
    # isolated), or per interleaved round on a remote device; the *_ms fields are their medians.
    samples_ms: dict[str, list[float]] = field(default_factory=dict)
    threads: int = 0
    # CPU (in cores) other processes used while the builds were timed (timing.MachineLoad).
    machine_load: dict[str, Any] = field(default_factory=dict)
    # The deployable library written (WORK_DIR/<name>.so).
    library: str = ""
    # Where the tuned and untuned builds were timed: "this machine" or the device behind an RPC
    # tracker. PyTorch eager always runs on this machine.
    builds_timed_on: str = THIS_MACHINE
    # Every option of the run (tcl.tuning.options.TuneOptions.saved).
    options: dict[str, Any] = field(default_factory=dict)
    # Programs this run measured: its trials, or fewer where a time budget ended it (reports
    # written before the field: 0, read as the trials asked for).
    measured: int = 0
    # Tasks of a GPU run built with TVM's untuned (dlight) kernel, faster than every program
    # tuned for them or the only one measured (tcl.tuning.untuned); 0 on a CPU.
    dlight_tasks: int = 0
    # The untuned build's output against PyTorch's (None: the model came without PyTorch, or a
    # report written before the field), and the largest |reference output| (OutputCheck).
    untuned_max_abs_error: float | None = None
    output_scale: float | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TuneReport:
        """A report read back from its JSON; reports written before the options were saved
        whole kept some of them beside the figures (exact math then, unless ``fast_math``)."""
        data = dict(data)
        options = dict(data.pop("options", {}))
        for name in ("cost_model", "trials", "population", "cold_cache", "explore"):
            if name in data:
                options.setdefault(name, data.pop(name))
        if "weight_prepack" in data:
            options.setdefault("weight_prepack", data.pop("weight_prepack"))
        options.setdefault("exact_math", not data.pop("fast_math", False))
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known}, options=options)

    @property
    def settings(self) -> TuneOptions:
        return TuneOptions.from_saved(self.options)

    @property
    def cost_model(self) -> str | None:
        """The cost model that ran (None only in a report of options never run: a run names
        its device's default, :meth:`TuneOptions.on_device`)."""
        return self.settings.cost_model

    @property
    def trials(self) -> int:
        return self.settings.trials

    @property
    def fast_math(self) -> bool:
        return not self.settings.exact_math

    @property
    def weight_prepack(self) -> bool:
        return self.settings.weight_prepack

    @property
    def population(self) -> int:
        return self.settings.population

    @property
    def cold_cache(self) -> bool:
        return self.settings.cold_cache

    @property
    def explore(self) -> int:
        return self.settings.explore

    @property
    def first_round(self) -> int:
        return self.settings.first_round

    def passed_torch(self) -> dict[str, float] | None:
        """The first point of the curve whose estimate is below PyTorch eager's median, or None
        (no PyTorch, or never)."""
        if self.torch_ms is None:
            return None
        return next((p for p in self.curve if p["estimated_ms"] < self.torch_ms), None)

    def behind_torch(self) -> str | None:
        """Where PyTorch eager's median beats the tuned build's (and the build computes what
        the model does), what to do about it: tune longer, resuming the run; else None."""
        if self.torch_ms is None or self.latency_ms <= self.torch_ms or self.output_warning():
            return None
        return (
            f"PyTorch eager is faster than the tuned network ({self.torch_ms:.4g} against "
            f"{self.latency_ms:.4g} ms): tuning longer may pass it; the same command run again "
            "resumes this run from the programs its work directory holds (--minutes M: M more "
            "minutes)"
        )

    def output_warning(self) -> str | None:
        """What is wrong with the built network's output, or None: it computes what the model
        does (to within :data:`OUTPUT_TOLERANCE`)."""
        if self.output_scale is None:  # a report written before the check: nothing to judge by
            return None
        check = OutputCheck(self.max_abs_error, self.output_scale, self.untuned_max_abs_error)
        if not check.wrong(check.tuned_error):
            return None
        if self.torch_ms is None:
            return (
                "warning: the tuned network's output is not the untuned build's: a tuned kernel "
                "computes something else; do not deploy this library"
            )
        if check.untuned_error is not None and check.wrong(check.untuned_error):
            return (
                "warning: the tuned network's output is not PyTorch's, and neither is the untuned "
                f"build's (max |untuned - PyTorch| {check.untuned_error:.2e}): TVM imports or "
                "compiles this network wrongly, whatever the tuning; do not deploy this library"
            )
        return (
            "warning: the tuned network's output is not PyTorch's, though the untuned build's is: "
            "a tuned kernel computes something else; do not deploy this library"
        )

    def timings(self) -> dict[str, Timing]:
        medians = {"tuned": self.latency_ms, "untuned": self.untuned_ms, "torch": self.torch_ms}
        return {
            k: Timing(self.samples_ms.get(k) or [v]) for k, v in medians.items() if v is not None
        }

    def _first_round(self) -> str:
        """The header's words on a quick first round: its size, whether light tasks measure
        fewer (``first_round_allot``), how far its picks unroll (``first_round_unroll``) and
        how many are transplants."""
        if not self.first_round:
            return ""
        about = []
        if self.settings.first_round_allot == "time":
            about.append("fewer for light tasks")
        if self.settings.first_round_unroll is not None:
            about.append(f"unrolled by at most {self.settings.first_round_unroll} steps")
        if self.settings.transplants:
            about.append(f"{self.settings.transplants} from other tasks' best programs")
        return f", first round of {self.first_round}" + (f" ({'; '.join(about)})" if about else "")

    def _later_rounds(self) -> str:
        """How the lines name the search of each task's rounds after its first full one, where
        it is not the first's."""
        named = []
        if self.settings.narrower_later_rounds is not None:
            named.append(f"population {self.settings.narrower_later_rounds}")
        if self.settings.later_iters != LATER_ROUND_ITERS:
            named.append(counted(self.settings.later_iters, "evolution step"))
        return f", later rounds' {' and '.join(named)}" if named else ""

    def _header(self) -> str:
        """The lines' first: what was tuned, where, how long, and how the search was set."""
        trials = counted(self.measured or self.trials, "trial")
        return (
            f"{self.network} on {self.platform}: {trials} over "
            f"{counted(self.tasks, 'task')} with "
            f"the {self.cost_model} cost model in {self.tune_seconds:.0f} s"
            + (f" (a {self.settings.minutes:g}-minute budget)" if self.settings.minutes else "")
            + (", fast math" if self.fast_math else "")
            + (", weights pre-packed" if self.weight_prepack else "")
            + (
                f", convolutions in {self.settings.conv_layout}"
                if self.settings.conv_layout
                else ""
            )
            + (f", population {self.population}" if self.population != DEFAULT_POPULATION else "")
            + self._later_rounds()
            + (
                f", rounds of {counted(self.settings.per_round, 'program')} a task"
                if self.settings.per_round
                else ""
            )
            + (", timed with cold caches" if self.cold_cache else "")
            + (f", {self.explore} random picks a round" if self.explore else "")
            + self._first_round()
            + (
                f", then a round of {self.settings.transplant_round} "
                + ("more of theirs" if self.settings.transplants else "of other tasks' best")
                + TRANSPLANT_SHARING.get(self.settings.transplant_allot, "")
                if self.first_round and self.settings.transplant_round
                else ""
            )
            + (
                (" ranked by " if self.first_round else ", first round ranked by ")
                + Path(self.settings.first_round_model).name
                if self.settings.first_round_model
                else ""
            )
            + (", picks allotted by time" if self.settings.allot == "time" else "")
            + (", the database's programs learnt first" if self.settings.learn_earlier else "")
            + (
                f", rounds trimmed by confidence to at least {self.settings.confident}"
                if self.settings.confident
                else ""
            )
            + (
                f", the last {self.settings.post_opt} to Droplet's post-optimization"
                if self.settings.post_opt
                else ""
            )
        )

    def lines(self) -> list[str]:
        t = self.timings()
        rounds = len(self.samples_ms.get("tuned", [])) or 1
        tuned, untuned, torch = t["tuned"], t["untuned"], t.get("torch")
        reference = "PyTorch" if torch else "untuned"
        out = [
            self._header(),
            "latency, median [range] of "
            + (
                counted(rounds, "fresh process", "fresh processes")
                if self.builds_timed_on == THIS_MACHINE
                else f"{rounds} interleaved rounds; builds on {self.builds_timed_on}"
            )
            + f", {counted(self.threads, 'thread')}:",
            f"  tuned          {tuned.text()}",
            f"  untuned        {untuned.text()}   speed-up {speedup_text(untuned, tuned)}"
            + (
                f" (over {ONE_PROCESS_MS / 1e3:g} s a run: timed in one process)"
                if len(untuned.samples_ms) == 1 < rounds
                else ""
            ),
            f"  PyTorch eager  {torch.text()}   speed-up {speedup_text(torch, tuned)}"
            if torch
            else "  PyTorch eager  (the model came without PyTorch)",
            f"max |tuned - {reference}| {self.max_abs_error:.2e}",
        ]
        warning = self.output_warning()
        if warning:
            out.append(warning)
        if self.dlight_tasks:
            out.append(
                f"{self.dlight_tasks} of {counted(self.tasks, 'task')} run TVM's untuned (dlight) "
                "kernel: no program tuned for them was faster"
            )
        passed = self.passed_torch()
        if passed is not None:
            out.append(
                f"the estimated latency passed PyTorch eager's after {passed['seconds']:.0f} s of "
                f"tuning ({counted(int(passed['trial']), 'trial')}; the estimate sums the tasks' "
                "best kernels, a little below the built network)"
            )
        behind = self.behind_torch()
        if behind:
            out.append(behind)
        if self.machine_load:
            load = MachineLoad(**self.machine_load)
            out.append(load.text())
            if load.busy:
                out.append(
                    "warning: the machine was busy while timing; these latencies and speed-ups "
                    "are noisy (see the ranges): time again on a quiet machine"
                )
        return out


def write_report(report: TuneReport, path: str | Path) -> None:
    Path(path).write_text(json.dumps(asdict(report), indent=1))


def running_best(rs: Any, first: dict[str, float] | None = None) -> Iterator[dict[str, float]]:
    """Each task's best mean cost (s) by workload key after each record of ``rs`` in turn (one
    dict, updated in place), starting from ``first``'s costs; a failed record changes nothing."""
    best: dict[str, float] = dict(first or {})
    for i in range(len(rs)):
        key = rs.tasks.workload_key[int(rs.columns["task"][i])]
        cost = float(rs.columns["mean_cost"][i])
        if rs.columns["error"][i] == 0 and cost < best.get(key, math.inf):
            best[key] = cost
        yield best


def best_costs(rs: Any) -> dict[str, float]:
    """Each task's best mean cost (s) in ``rs``, by workload key (tasks with no successful
    record are left out)."""
    last: dict[str, float] = {}
    for best in running_best(rs):
        last = best
    return dict(last)


def estimate_curve(
    work_dir: Path,
    weights: dict[str, float],
    batches: list[tuple[float, int]],
    start: float,
    earlier: int = 0,
    untuned: dict[str, float] | None = None,
    untuned_at: float = 0.0,
) -> list[dict[str, float]]:
    """Estimated network latency (sum over tasks of weight x best mean cost so far) after each
    measured trial, in measurement order (the database file is append-only), from the first
    trial at which every task has a measured program; with the wall time since the start of
    tuning at which the runner finished that trial's batch (0 for the ``earlier`` trials of
    runs this one resumed). Trials whose build failed never reach the runner; their times are
    matched by position (pro rata). With ``untuned`` (a GPU run: each task's untuned kernel's
    seconds by workload key, measured ``untuned_at`` seconds in), every task starts from its
    untuned kernel: the curve starts at trial 0, and a task's cost is the faster of the two."""
    from tcl.records import read_records

    rs = read_records(work_dir)
    ends = np.repeat([t - start for t, _ in batches], [n for _, n in batches])
    new = max(1, len(rs) - earlier)
    out = []
    first = estimated_ms(untuned or {}, weights)
    if untuned and not earlier and not math.isnan(first):
        out.append({"trial": 0, "seconds": round(untuned_at, 2), "estimated_ms": first})
    for i, best in enumerate(running_best(rs, untuned)):
        estimate = estimated_ms(best, weights)
        if math.isnan(estimate):
            continue  # the estimate means something once every task has a measured program
        at = int((i - earlier) * len(ends) / new) if len(ends) and i >= earlier else -1
        seconds = float(ends[at]) if at >= 0 else 0.0 if i < earlier else float("nan")
        out.append({"trial": i + 1, "seconds": round(seconds, 2), "estimated_ms": estimate})
    return out


def _readable_log_axis(ax: Any) -> None:
    """Plain numbers at 1, 2 and 5 times powers of ten (a log axis over less than a decade
    otherwise shows one label such as 2.4x10^0)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    def label(value: float, _: Any) -> str:
        return f"{value:g}"

    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(label))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, p: ""))


def plot_curves(reports: list[TuneReport], path: str | Path, title: str = "") -> None:
    """Best estimated latency against trials and against wall time, one line per report; with
    one report, its built latency, the untuned build's and PyTorch eager's as reference lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_trial, by_time) = plt.subplots(1, 2, figsize=(10, 4))
    for report in reports:
        label = f"{report.network} / {report.cost_model} (estimate)"
        trials = [p["trial"] for p in report.curve]
        seconds = [p["seconds"] for p in report.curve]
        latency = [p["estimated_ms"] for p in report.curve]
        by_trial.plot(trials, latency, label=label)
        by_time.plot(seconds, latency, label=label)
    if len(reports) == 1:
        report = reports[0]
        references = [
            (report.torch_ms, "PyTorch eager", "tab:red", "--"),
            (report.untuned_ms, "untuned build", "tab:gray", ":"),
            (report.latency_ms, "tuned build", "tab:green", "-."),
        ]
        for ax in (by_trial, by_time):
            for value, name, color, style in references:
                if value is None:
                    continue
                ax.axhline(value, color=color, linestyle=style, label=f"{name} {value:.3g} ms")
    for ax, xlabel in ((by_trial, "measured trials"), (by_time, "tuning wall time (s)")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel("latency (ms)")
        ax.set_yscale("log")
        _readable_log_axis(ax)
        ax.set_xlim(left=0)
        ax.grid(alpha=0.3, which="both")
    by_trial.legend(fontsize=8)
    fig.suptitle(title or "tcl tune")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
