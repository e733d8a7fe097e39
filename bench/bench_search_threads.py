"""How MetaSchedule's evolutionary search of a network's tasks scales with its threads.

A GPU's candidates run on the GPU, so the search may take every core of its host; a CPU
platform's search keeps 2 threads (``tcl.integrations.tvm.measure.search_threads``). This times
one search step (``generate_measure_candidates``: the initial population, ``--iters``
generations of mutation, every candidate through the target's postprocessors, such as a GPU's
code verification) of each task, with each thread count in turn, over ``--passes`` alternating
passes. The cost model is MetaSchedule's random one, so the time is the search's alone. Needs no
GPU: the search only generates and checks programs. Prints one JSON line: seconds per pass, by
thread count.

Usage: python bench/bench_search_threads.py [--network bert_tiny] [--platform cuda-h100]
       [--threads 1,2] [--passes 2] [--population 128] [--iters 4]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from _common import machine

from tcl import zoo
from tcl.tuning import platforms


def search_seconds(tasks: list[Any], target: Any, threads: int, args: argparse.Namespace) -> float:
    """One search step of every task with ``threads`` threads, in seconds."""
    from tvm.s_tir import meta_schedule as ms

    total = 0.0
    for task in tasks:
        context = ms.TuneContext(
            mod=task.dispatched[0],
            target=target,
            space_generator="post-order-apply",
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=args.population,
                init_measured_ratio=0,
                genetic_num_iters=args.iters,
            ),
            task_name=task.task_name,
            rand_state=0,
            num_threads=threads,
        )
        context.pre_tuning(
            max_trials=8,
            num_trials_per_iter=4,
            design_spaces=context.generate_design_space(),
            database=ms.database.MemoryDatabase(),
            cost_model=ms.cost_model.RandomModel(),
        )
        start = time.perf_counter()
        context.generate_measure_candidates()
        total += time.perf_counter() - start
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--network", default="bert_tiny")
    parser.add_argument("--platform", default="cuda-h100")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--population", type=int, default=128)
    parser.add_argument("--iters", type=int, default=4)
    args = parser.parse_args()
    import tvm

    from tcl.zoo.extract import extracted_tasks, import_network

    platform = platforms.get(args.platform)
    target = tvm.target.Target(platform.tvm_target())
    net = zoo.get(args.network)
    example = zoo.example_input(net)
    tasks = extracted_tasks(import_network(zoo.module(net, example), example), target)
    seconds: dict[int, list[float]] = {}
    for _ in range(args.passes):
        for threads in (int(t) for t in args.threads.split(",")):
            seconds.setdefault(threads, []).append(
                round(search_seconds(tasks, target, threads, args), 2)
            )
    print(
        json.dumps(
            {
                "network": args.network,
                "tasks": len(tasks),
                "platform": platform.to_dict(),
                "seconds_per_pass": seconds,
                "population": args.population,
                "generations": args.iters,
                "method": "one generate_measure_candidates of each task per pass and thread "
                "count, random cost model, thread counts alternating",
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
