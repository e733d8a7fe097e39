"""Summaries of a record set, as printed by ``tcl records stats`` and ``tcl quickstart``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tcl.records.recordset import RecordSet


def summarize(rs: RecordSet) -> dict[str, Any]:
    """Counts, skipped lines by reason, unknown kinds and the token-length distribution.

    ``steps`` describes schedule lengths before the ``max_len`` cut (``num_steps``), so that a
    user can see how much the cut loses.
    """
    steps = rs.columns["num_steps"]
    ok = rs.columns["error"] == 0
    per_task = np.bincount(rs.columns["task"], minlength=len(rs.tasks))
    quantiles = [0.0, 0.5, 0.9, 0.99, 1.0]
    length = (
        dict(
            zip(
                ["min", "median", "p90", "p99", "max"],
                np.quantile(steps, quantiles).tolist(),
                strict=True,
            )
        )
        if len(steps)
        else {}
    )
    edges = [0, 8, 16, 32, 64, 128, 256, np.iinfo(np.int32).max]
    counts, _ = np.histogram(steps, bins=edges)
    histogram = {
        (f"{lo}-{hi - 1}" if hi != edges[-1] else f">={lo}"): int(n)
        for lo, hi, n in zip(edges[:-1], edges[1:], counts, strict=True)
    }
    return {
        "records": len(rs),
        "measured": int(ok.sum()),
        "failed": int((~ok).sum()),
        "tasks": int((per_task > 0).sum()),
        "records_per_task": {
            "min": int(per_task[per_task > 0].min()) if len(rs) else 0,
            "max": int(per_task.max()) if len(rs) else 0,
        },
        "targets": rs.targets,
        "files": len(rs.files),
        "lines": rs.report.lines,
        "skipped": rs.report.skipped,
        "skip_examples": {
            reason: {"file": f, "line": line, "field": field, "detail": detail}
            for reason, (f, line, field, detail) in rs.report.skip_examples.items()
        },
        "unknown_kinds": rs.report.unknown_kinds,
        "vocab_size": len(rs.vocab),
        "max_len": rs.tokenizer.max_len,
        "truncated": int((steps > rs.tokenizer.max_len).sum()),
        "steps": {**length, "histogram": histogram},
    }


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as aligned text lines."""
    lines = [
        f"records      {summary['records']:,} ({summary['measured']:,} measured, "
        f"{summary['failed']:,} failed) from {summary['files']} file(s), "
        f"{summary['lines']:,} lines",
        f"tasks        {summary['tasks']:,} ({summary['records_per_task']['min']}-"
        f"{summary['records_per_task']['max']} records each)",
        f"targets      {len(summary['targets'])}",
    ]
    lines += [f"  [{i}] {t}" for i, t in enumerate(summary["targets"])]
    if summary["skipped"]:
        lines.append(
            "skipped      " + ", ".join(f"{k}: {v}" for k, v in summary["skipped"].items())
        )
        for reason, ex in summary["skip_examples"].items():
            where = f" in {ex['field']}" if ex["field"] else ""
            lines.append(f"  first {reason}: {ex['file']}:{ex['line']}{where}: {ex['detail']}")
    else:
        lines.append("skipped      none")
    if summary["unknown_kinds"]:
        top = sorted(summary["unknown_kinds"].items(), key=lambda kv: -kv[1])[:5]
        lines.append("unknown kinds " + ", ".join(f"{k} x{v}" for k, v in top))
    steps = summary["steps"]
    if "median" in steps:
        lines.append(
            f"steps        min {steps['min']:.0f}, median {steps['median']:.0f}, "
            f"p90 {steps['p90']:.0f}, max {steps['max']:.0f}; "
            f"{summary['truncated']:,} cut at max_len {summary['max_len']}"
        )
        lines.append("  " + "  ".join(f"{k}: {v}" for k, v in steps["histogram"].items() if v))
    lines.append(f"vocabulary   {summary['vocab_size']} kinds")
    return "\n".join(lines)
