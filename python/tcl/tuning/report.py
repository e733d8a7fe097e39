"""What a tuning run reports: the built network's latency beside the untuned build and PyTorch
eager (medians and every sample: one per fresh timing process), the estimated latency after
every trial (:mod:`tcl.tuning.curves`), and what to do where PyTorch eager is faster. Written
as WORK_DIR/report.json by ``tcl tune``, its curve plotted in report.png."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from tcl._format import counted
from tcl.tuning.allot import PROGRAMS_FLOOR
from tcl.tuning.isolated import ONE_PROCESS_MS
from tcl.tuning.layout import converted_to
from tcl.tuning.options import DEFAULT_POPULATION, LATER_ROUND_ITERS, TuneOptions
from tcl.tuning.output_check import OutputCheck
from tcl.tuning.timing import THIS_MACHINE, MachineLoad, Timing, speedup_text

# how the report's header says the round of transplants was shared (``transplant_allot``)
TRANSPLANT_SHARING = {
    "time": " a task, shared by time",
    "time-exact": " a task, shared by time, more only of those that keep every tile decision",
}
# What the settings line says of each task scheduler but MetaSchedule's gradient.
_TRANSPLANTS_FIRST = ", every task's round of transplants before any full round"
SCHEDULER_WORDS = {
    "programs": ", rounds counted by their programs",
    "programs-floor": f", rounds counted by their programs (at least {PROGRAMS_FLOOR} a task)",
    "transplants-first": _TRANSPLANTS_FIRST,
    "per-second": _TRANSPLANTS_FIRST + ", then the most expected gain a second",
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
        the model does), what to do about it, else None: tune longer, resuming the run, where
        the tuned kernels' estimate is still above PyTorch's latency; where it is below, what
        keeps the build behind is its time beyond the tuned kernels, which tuning does not
        shorten."""
        if self.torch_ms is None or self.latency_ms <= self.torch_ms or self.output_warning():
            return None
        behind = (
            f"PyTorch eager is faster than the tuned network ({self.torch_ms:.3f} against "
            f"{self.latency_ms:.3f} ms)"
        )
        estimate = self.curve[-1]["estimated_ms"] if self.curve else None
        if estimate is not None and estimate < self.torch_ms:
            return (
                f"{behind}, though its tuned kernels' estimate is below PyTorch's "
                f"({estimate:.3f} ms): about {self.latency_ms - estimate:.3f} ms of the network "
                "is outside them (the zero-FLOP copies tcl tune leaves untuned, the VM between "
                "kernels), and tuning longer shortens only the kernels"
            )
        more = "--minutes M: M more minutes" if self.settings.minutes else "--trials N: N more"
        return (
            f"{behind}: tuning longer may pass it; the same command run again resumes this run "
            f"from the programs its work directory holds ({more})"
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
        how many are transplants, and at which LLVM level they are built."""
        if not self.first_round:
            return ""
        about = []
        if self.settings.first_round_allot == "time":
            about.append("fewer for light tasks")
        if self.settings.first_round_unroll is not None:
            about.append(f"unrolled by at most {self.settings.first_round_unroll} steps")
        if self.settings.transplants_fill_quick_round:
            about.append("other tasks' best programs where a task has as many")
        elif self.settings.transplants:
            about.append(f"{self.settings.transplants} from other tasks' best programs")
        if self.settings.first_round_opt_level is not None:
            about.append(f"built at LLVM level {self.settings.first_round_opt_level}")
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
                if converted_to(self.settings.conv_layout)
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
            + (
                f", repeats of at least {self.settings.repeat_ms} ms"
                if self.settings.repeat_ms is not None
                else ""
            )
            + (
                f", candidates built at LLVM level {self.settings.candidate_opt_level}"
                if self.settings.candidate_opt_level is not None
                else ""
            )
            + (f", {self.explore} random picks a round" if self.explore else "")
            + (
                f", {self.settings.share_best} of the other tasks' best programs a round"
                if self.settings.share_best
                else ""
            )
            + self._first_round()
            + (", its best register-blocked after it" if self.settings.register_block else "")
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
            + SCHEDULER_WORDS.get(self.settings.task_scheduler, "")
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
            trials = counted(int(passed["trial"]), "trial")
            # a resumed run's curve starts with the earlier runs' trials, at 0 s
            if passed["trial"] > 0 and passed["seconds"] == 0:
                when = "with the work directory's earlier programs"
                trials += " of the runs this one resumed"
            else:
                when = f"after {passed['seconds']:.0f} s of tuning"
            out.append(
                f"the estimated latency passed PyTorch eager's {when} ({trials}; the estimate "
                "sums the tasks' best kernels, a little below the built network)"
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
