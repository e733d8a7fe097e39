"""A tuning run's curve: the network's estimated latency after every trial (the sum over its
tasks of weight x best measured cost, from the work directory's records), and its plot beside
other runs' (``report.png``)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tcl.integrations.tvm.console import estimated_ms

if TYPE_CHECKING:
    from tcl.tuning.report import TuneReport


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
