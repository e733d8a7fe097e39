"""What scoring one program costs inside a search, piece by piece, on a network's tasks.

For each task of the network, random programs of its design space (as a search's first
generation) are scored as tcl's cost model and MetaSchedule's XGB score them in a run, and each
piece is timed per program: the program's key in tcl's score cache (a digest of its printed
trace), the collector's JSON text of its trace (``trace_key(trace_json(...))``), the same text
converted from TVM's lists with no copy (``text_of_trace``, the search's keys) and written by
MetaSchedule's record writer for the whole task's batch (``trace_texts``, what tcl's
``predict`` reads), the whole of tcl's
``predict`` (and the same with the reference texts, ``trace_texts.reference_texts``) and the
model alone on the tokenized programs, and XGB's feature extraction. The
pieces run interleaved, ``--repeats`` times; each figure is the median over the repeats of the
mean over every task's programs.

Prints one JSON line: ms per program for each piece, the tasks and programs, the machine.

Usage: taskset -c 1 python bench/bench_scoring.py [--network bert_tiny]
       [--platform cpu-native-1t] [--programs 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from _common import machine

from tcl.tuning import platforms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--platform", default="cpu-native-1t")
    parser.add_argument("--programs", type=int, default=64, help="random programs per task")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from tvm.s_tir import meta_schedule as ms

    from tcl.integrations.tvm import measure as tm
    from tcl.integrations.tvm.adapter import CostModel, candidate_records
    from tcl.integrations.tvm.patches import patch_inspect_stack
    from tcl.integrations.tvm.trace_texts import reference_texts, trace_texts
    from tcl.model.inputs import predict
    from tcl.tuning.options import TuneOptions
    from tcl.tuning.tune import network_tasks
    from tcl.tuning.user_models import load_model

    patch_inspect_stack()
    target = platforms.get(args.platform).tvm_target()
    _, extracted = network_tasks(load_model(args.network), target, TuneOptions())
    tasks = []
    for task in extracted:
        mod = task.dispatched[0]
        context = ms.TuneContext(mod=mod, target=target, task_name=task.task_name)
        tasks.append((context, tm.random_candidates(mod, target, args.programs, seed=0)))
    model = CostModel.from_checkpoint()
    xgb_features = ms.feature_extractor.PerStoreFeature(extract_workload=True)
    tokenized = [(model._records(ctx, cands), cands) for ctx, cands in tasks]

    def each(piece: Callable[[Any], Any]) -> Callable[[Any, list[Any]], None]:
        return lambda ctx, cands: [piece(c) for c in cands]  # type: ignore[func-returns-value]

    pieces: dict[str, Callable[[Any, list[Any]], Any]] = {
        "cache key": each(
            lambda c: hashlib.blake2b(str(c.sch.trace).encode(), digest_size=16).digest()
        ),
        "trace_key(trace_json)": each(lambda c: tm.trace_key(tm.trace_json(c.sch))),
        "text_of_trace": each(lambda c: tm.text_of_trace(c.sch.trace)),
        "trace_texts": lambda ctx, cands: trace_texts(cands),
        "tcl predict, nothing kept": lambda ctx, cands: (
            model.cache.forget(),
            model.predict(ctx, cands),
        ),
        "tcl predict, nothing kept, reference texts": lambda ctx, cands: predict(
            model.net,
            candidate_records(cands, target, model.vocab, model.tokenizer, reference_texts),
        ),
        "tcl model alone": lambda ctx, cands: predict(
            model.net, next(rs for rs, c in tokenized if c is cands)
        ),
        "XGB features": lambda ctx, cands: xgb_features.extract_from(ctx, cands),
    }
    ms_per_program: dict[str, list[float]] = defaultdict(list)
    programs = sum(len(cands) for _, cands in tasks)
    for _ in range(args.repeats):
        for name, piece in pieces.items():
            start = time.perf_counter()
            for context, cands in tasks:
                piece(context, cands)
            ms_per_program[name].append(1e3 * (time.perf_counter() - start) / programs)
    print(
        json.dumps(
            {
                "benchmark": "scoring",
                "network": args.network,
                "platform": args.platform,
                "tasks": len(tasks),
                "programs": programs,
                "repeats": args.repeats,
                "ms_per_program": {
                    name: {
                        "median": round(statistics.median(v), 3),
                        "range": [round(min(v), 3), round(max(v), 3)],
                    }
                    for name, v in ms_per_program.items()
                },
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
