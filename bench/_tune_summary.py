"""bench_tune's figures from its runs and timed checkpoint builds: per-run curves of the built
latency, the time to beat PyTorch eager and to build as fast as XGB's final build, the built
latency after fixed tuning times, the latency ratios against the baselines at each checkpoint,
the tuning time to the MLP's final estimate, and the plot."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from tcl.tuning.timing import Timing


def figure(t: Timing) -> dict[str, Any]:
    return {"median": round(t.median, 4), "range": [round(t.low, 4), round(t.high, 4)]}


def geomean(values: list[float]) -> float | None:
    good = [v for v in values if v and math.isfinite(v) and v > 0]
    return round(float(np.exp(np.mean(np.log(good)))), 4) if good else None


def at_trial(run: Any, trials: int) -> dict[str, float] | None:
    """The run's curve point (estimate and wall time) at ``trials`` measured records."""
    return next((p for p in run.report.curve if int(p["trial"]) == trials), None)


def points(run: Any, timings: dict[str, Timing]) -> list[dict[str, Any]]:
    """The run's checkpoints: trials, tuner wall time, built latency, estimate. Before every
    task has a measurement the curve has no point (no estimate): the wall time is then taken
    pro rata from the curve's first point (the first round measures at a steady pace)."""
    out = []
    prefix = f"{run.label}@"
    labels = [k for k in timings if k.startswith(prefix)]
    first = run.report.curve[0] if run.report.curve else None
    for label in sorted(labels, key=lambda k: int(k[len(prefix) :])):
        trials = int(label[len(prefix) :])
        curve = at_trial(run, trials)
        seconds = curve["seconds"] if curve else None
        if curve is None and first is not None and trials < first["trial"]:
            seconds = first["seconds"] * trials / first["trial"]
        out.append(
            {
                "trials": trials,
                "seconds": round(seconds, 1) if seconds is not None else None,
                "built_ms": figure(timings[label]),
                "estimated_ms": round(curve["estimated_ms"], 4) if curve else None,
            }
        )
    return out


def reach_estimate(run: Any, goal_ms: float) -> float | None:
    """Tuner seconds after which the run's estimated latency first was <= ``goal_ms``."""
    for p in run.report.curve:
        if p["estimated_ms"] <= goal_ms * (1 + 1e-9):
            return float(p["seconds"])
    return None


def built_at(curve: list[dict[str, Any]], checkpoint: int) -> float | None:
    """Median built latency at the last checkpoint within ``checkpoint`` trials."""
    within = [p for p in curve if p["trials"] <= checkpoint]
    return within[-1]["built_ms"]["median"] if within else None


def built_within(curve: list[dict[str, Any]], seconds: float) -> float | None:
    """Median built latency of the last checkpoint measured within ``seconds`` of tuning."""
    within = [p for p in curve if p["seconds"] is not None and p["seconds"] <= seconds]
    return within[-1]["built_ms"]["median"] if within else None


def reach_built(curve: list[dict[str, Any]], goal_ms: float) -> float | None:
    """Tuning seconds of the first checkpoint whose built latency (median) is <= ``goal_ms``."""
    for p in curve:
        if p["built_ms"]["median"] <= goal_ms * (1 + 1e-9) and p["seconds"] is not None:
            return float(p["seconds"])
    return None


def last_slower(curve: list[dict[str, Any]], goal_ms: float) -> float | None:
    """Tuning seconds of the last checkpoint before the first one whose built latency (median)
    is <= ``goal_ms``: the run reached the goal after this time, so between the two checkpoints
    (None when the run never reached it or its first timed checkpoint already did)."""
    before = None
    for p in curve:
        if p["seconds"] is None:
            continue
        if p["built_ms"]["median"] <= goal_ms * (1 + 1e-9):
            return before
        before = float(p["seconds"])
    return None


def xgb_final_goal(runs: list[Any], curves: dict[str, Any]) -> dict[str, Any]:
    """Seconds each run takes to build a network as fast as XGB's final build (the median over
    XGB's runs of each one's last checkpoint), and the ratio of XGB's own time to it. Builds
    exist only at checkpoints, so the crossing lies after the last slower checkpoint: the ratio
    is bracketed by [XGB's time / the reaching checkpoint's, XGB's time / the slower one's]."""
    xgb = [run for run in runs if run.kind == "xgb" and curves[run.label]]
    if not xgb:
        return {}
    goal = float(np.median([curves[r.label][-1]["built_ms"]["median"] for r in xgb]))
    own = [t for r in xgb if (t := reach_built(curves[r.label], goal)) is not None]
    xgb_seconds = float(np.median(own)) if own else None
    seconds = {run.label: reach_built(curves[run.label], goal) for run in runs}
    ratio: dict[str, float | None] = {}
    bracket: dict[str, list[float | None]] = {}
    for run in runs:
        t, slower = seconds[run.label], last_slower(curves[run.label], goal)
        ratio[run.label] = round(xgb_seconds / t, 3) if xgb_seconds and t else None
        if xgb_seconds and t and run.kind != "xgb":
            bracket[run.label] = [
                ratio[run.label],
                round(xgb_seconds / slower, 3) if slower else None,
            ]
    # The same by the tuner's estimates, which are known after every trial and carry no
    # timing noise of the builds (on a noisy host a build's median moves by several percent
    # between timings, as much as the last steps towards XGB's final build).
    finals = [r.report.curve[-1]["estimated_ms"] for r in xgb if r.report.curve]
    estimate_goal = float(np.median(finals)) if finals else math.nan
    xgb_estimated = [t for r in xgb if (t := reach_estimate(r, estimate_goal)) is not None]
    estimated = {run.label: reach_estimate(run, estimate_goal) for run in runs}
    return {
        "xgb_final_built_ms": round(goal, 4),
        "seconds_to_xgb_final_built": seconds,
        "tuning_time_ratio_vs_xgb": ratio,
        "xgb_final_estimate_ms": round(estimate_goal, 4),
        "seconds_to_xgb_final_estimate": estimated,
        "tuning_time_ratio_vs_xgb_by_estimate": {
            label: round(float(np.median(xgb_estimated)) / t, 3) if xgb_estimated and t else None
            for label, t in estimated.items()
        },
        # [at least, at most]: the crossing lies between the reaching checkpoint and the last
        # slower one (None: no slower checkpoint was timed, no upper bound).
        "tuning_time_ratio_vs_xgb_bracket": bracket,
    }


def estimate_within(run: Any, seconds: float) -> tuple[float, float] | None:
    """(tuner seconds, estimated ms) of the run's last curve point within ``seconds``."""
    within = [p for p in run.report.curve if p["seconds"] <= seconds]
    return (float(within[-1]["seconds"]), float(within[-1]["estimated_ms"])) if within else None


def xgb_time_to_same_estimate(
    runs: list[Any], tcl: list[Any], at_seconds: list[float]
) -> dict[str, dict[str, float | None]]:
    """After each of ``at_seconds``, how many times a tcl run's time XGB needs to reach the
    estimate the tcl run had then (the median over XGB's runs; None where XGB never did):
    time to equal quality along the whole run, by the tuner's estimates."""
    xgb = [run for run in runs if run.kind == "xgb" and run.report.curve]
    out: dict[str, dict[str, float | None]] = {}
    for t in at_seconds:
        for run in tcl:
            point = estimate_within(run, t) if xgb else None
            if point is None:
                continue
            reached = [s for r in xgb if (s := reach_estimate(r, point[1])) is not None]
            out.setdefault(f"{t:g}", {})[run.label] = (
                round(float(np.median(reached)) / point[0], 3) if len(reached) == len(xgb) else None
            )
    return out


def network_summary(
    runs: list[Any], timed: dict[str, Any], checkpoints: list[int], at_seconds: list[float]
) -> dict[str, Any]:
    timings: dict[str, Timing] = timed["timings"]
    torch = timings["torch"]
    curves = {run.label: points(run, timings) for run in runs}
    detail: dict[str, Any] = {
        "torch_ms": figure(torch),
        "machine_load": asdict(timed["machine_load"]),
    }
    for run in runs:
        curve = curves[run.label]
        faster = next((p for p in curve if p["built_ms"]["median"] < torch.median), None)
        last = curve[-1]
        detail[run.label] = {
            "curve": curve,
            "beats_torch": {"trials": faster["trials"], "seconds": faster["seconds"]}
            if faster
            else None,
            "estimate_over_built": round(last["estimated_ms"] / last["built_ms"]["median"], 3)
            if last["estimated_ms"]
            else None,
            "tune_seconds": round(run.report.tune_seconds, 1),
            "tasks": run.report.tasks,
        }
    detail["built_ms_within_seconds"] = {
        f"{t:g}": {run.label: built_within(curves[run.label], t) for run in runs}
        for t in at_seconds
    }
    detail.update(xgb_final_goal(runs, curves))
    tcl = [run for run in runs if run.kind.startswith("tcl")]
    detail["xgb_time_ratio_to_same_estimate"] = xgb_time_to_same_estimate(runs, tcl, at_seconds)
    ratios: dict[str, Any] = {}
    for c in checkpoints:
        for baseline in ("mlp", "xgb"):
            base = [built_at(curves[r.label], c) for r in runs if r.kind == baseline]
            if not base or None in base:
                continue
            reference = float(np.median([b for b in base if b is not None]))
            ratios.setdefault(str(c), {})[f"vs_{baseline}"] = {
                r.label: round(reference / (built_at(curves[r.label], c) or math.nan), 4)
                for r in tcl
            }
    detail["latency_ratio_at"] = ratios
    mlp = next((run for run in runs if run.kind == "mlp"), None)
    if mlp is not None and mlp.report.curve:
        goal = mlp.report.curve[-1]["estimated_ms"]
        own = reach_estimate(mlp, goal)
        # Estimates of candidates timed with cold caches are on another scale than warm ones.
        alike = [run for run in runs if run.report.cold_cache == mlp.report.cold_cache]
        detail["seconds_to_mlp_final_estimate"] = {
            run.label: reach_estimate(run, goal) for run in alike
        }
        detail["tuning_time_ratio_vs_mlp"] = {
            run.label: round(own / t, 3) if own and (t := reach_estimate(run, goal)) else None
            for run in tcl
            if run in alike
        }
    return detail


def summarize(
    runs: dict[str, list[Any]],
    timed: dict[str, dict[str, Any]],
    checkpoints: list[int],
    at_seconds: list[float],
) -> dict[str, Any]:
    """Per network detail, and geometric means over networks of the goals' figures."""
    per_network = {
        n: network_summary(rs, timed[n], checkpoints, at_seconds) for n, rs in runs.items()
    }
    seeds = sorted({run.label for rs in runs.values() for run in rs if run.kind.startswith("tcl")})
    goals: dict[str, Any] = {}
    for c in checkpoints:
        for baseline in ("vs_mlp", "vs_xgb"):
            by_seed = {
                s: geomean(
                    [
                        d["latency_ratio_at"].get(str(c), {}).get(baseline, {}).get(s)
                        for d in per_network.values()
                    ]
                )
                for s in seeds
            }
            goals.setdefault(f"latency_ratio_{baseline}_at", {})[str(c)] = by_seed
    goals["tuning_time_ratio_vs_mlp"] = {
        s: geomean([d.get("tuning_time_ratio_vs_mlp", {}).get(s) for d in per_network.values()])
        for s in seeds
    }
    for ratio in ("tuning_time_ratio_vs_xgb", "tuning_time_ratio_vs_xgb_by_estimate"):
        goals[ratio] = {
            s: geomean([d.get(ratio, {}).get(s) for d in per_network.values()]) for s in seeds
        }
    goals["beats_torch"] = {
        n: {
            label: d[label]["beats_torch"]
            for label in d
            if isinstance(d[label], dict) and "curve" in d[label]
        }
        for n, d in per_network.items()
    }
    return {"goals": goals, "per_network": per_network}


def plot_runs(
    runs: dict[str, list[Any]], timed: dict[str, dict[str, Any]], path: Path, title: str
) -> None:
    """One panel per network: estimated latency (lines) and built latency at the checkpoints
    (markers with their range) against tuner wall time; PyTorch eager as a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(runs), figsize=(5 * len(runs), 4), squeeze=False)
    for ax, (network, rs) in zip(axes[0], runs.items(), strict=True):
        timings = timed[network]["timings"]
        lowest = timings["torch"].median
        for i, run in enumerate(rs):
            color = f"C{i}"
            curve = run.report.curve
            ax.plot(
                [p["seconds"] for p in curve],
                [p["estimated_ms"] for p in curve],
                color=color,
                alpha=0.4,
            )
            built = [p for p in points(run, timings) if p["seconds"] is not None]
            lowest = min([lowest, *(p["built_ms"]["range"][0] for p in built)])
            ax.errorbar(
                [p["seconds"] for p in built],
                [p["built_ms"]["median"] for p in built],
                yerr=np.array(
                    [
                        [p["built_ms"]["median"] - p["built_ms"]["range"][0] for p in built],
                        [p["built_ms"]["range"][1] - p["built_ms"]["median"] for p in built],
                    ]
                ).reshape(2, -1),
                fmt="o-",
                color=color,
                label=f"{run.label} built (estimate: faint)",
            )
        torch = timings["torch"].median
        ax.axhline(torch, color="tab:red", linestyle="--", label=f"PyTorch eager {torch:.3g} ms")
        # Checkpoints inside the first round (tasks still untuned) are off the scale; the
        # fastest build and PyTorch are on it.
        ax.set_ylim(0.85 * min(lowest, torch), 2.5 * torch)
        ax.set_xlabel("tuning wall time (s)")
        ax.set_ylabel("latency (ms)")
        ax.set_title(network)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
