"""``tcl records stats|convert`` and ``tcl sample``: reading measured records, and choosing the
programs of a pool worth measuring."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tcl.cli.args import fraction, given, output_file


def add_commands(commands: Any) -> None:
    records = commands.add_parser("records", help="read, summarize and convert measured records")
    records_commands = records.add_subparsers(dest="records_command", required=True)
    for name, func, text in (
        ("stats", stats, "summarize record files"),
        ("convert", convert, "write a binary RecordSet (.tcl)"),
    ):
        sub = records_commands.add_parser(name, help=text)
        sub.add_argument("paths", nargs="+", help="files, directories, globs; .gz is read too")
        sub.add_argument("--lenient", action="store_true", help="skip bad lines and count them")
        sub.add_argument("--threads", type=int, help="parser threads (default: all cores)")
        if name == "stats":
            sub.add_argument("--json", action="store_true", help="print one JSON object")
        else:
            sub.add_argument(
                "-o", "--output", required=True, type=output_file, help="output file (.tcl)"
            )
        sub.set_defaults(func=func)

    pick = commands.add_parser("sample", help="choose the programs of a pool worth measuring (RDU)")
    pick.add_argument("pool", nargs="+", help="a pool (tcl collect --pool-only) or records")
    pick.add_argument("--model", help="a cost model checkpoint (uncertainty and embeddings)")
    pick.add_argument("--fraction", type=fraction, default=0.1, help="of each task's pool")
    pick.add_argument(
        "-o", "--output", required=True, type=output_file, help="selection file (JSON lines)"
    )
    pick.set_defaults(func=sample)


def _read(args: argparse.Namespace) -> tuple[Any, float]:
    from tcl.records import read_records

    start = time.perf_counter()
    rs = read_records(
        args.paths,
        strict=not args.lenient,
        progress=args.progress,
        **given(args, num_threads="threads"),
    )
    return rs, time.perf_counter() - start


def stats(args: argparse.Namespace) -> int:
    from tcl.records.stats import format_summary, summarize

    rs, seconds = _read(args)
    summary = summarize(rs)
    summary["seconds"] = round(seconds, 4)
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
        print(f"read in      {seconds:.3f} s ({len(rs) / max(seconds, 1e-9):,.0f} records/s)")
    return 0


def convert(args: argparse.Namespace) -> int:
    rs, seconds = _read(args)
    rs.save(args.output)
    size = Path(args.output).stat().st_size
    print(
        f"wrote {len(rs):,} records ({len(rs.tasks):,} tasks) to {args.output} "
        f"({size / 1e6:.1f} MB) after reading for {seconds:.3f} s"
    )
    return 0


def sample(args: argparse.Namespace) -> int:
    from tcl.records import read_records
    from tcl.sampling import sampler

    if args.model:
        from tcl import model as models

        net, vocab, tokenizer, _ = models.load(args.model)
        rs = read_records(args.pool, vocab=vocab, tokenizer=tokenizer, progress=args.progress)
        points = sampler.model_embeddings(net, rs)
        uncertainty = sampler.model_uncertainty(net, rs, progress=args.progress)
    else:
        rs = read_records(args.pool, progress=args.progress)
        points, uncertainty = sampler.token_features(rs), None
    measured = rs.columns["error"] >= 0  # anything measured (or failed) needs no new measurement
    rows = sampler.select_per_task(
        points,
        rs.columns["task"],
        args.fraction,
        uncertainty=uncertainty,
        measured=measured,
        progress=args.progress,
    )
    with open(args.output, "w") as f:
        for row in rows:
            where = {
                "file": rs.files[int(rs.columns["file"][row])],
                "line": int(rs.columns["line"][row]),
                "task": int(rs.columns["task"][row]),
            }
            f.write(json.dumps(where) + "\n")
    print(
        f"selected {len(rows):,} of {len(rs):,} programs in {len(set(rs.columns['task'])):,} "
        f"tasks ({'model embeddings, MC-dropout' if args.model else 'token features'}); "
        f"wrote {args.output}"
    )
    return 0
