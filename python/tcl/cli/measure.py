"""``tcl collect`` and ``tcl active``: measuring programs of zoo networks' tasks into a store,
exhaustively or in RDU-sampled rounds."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tcl._format import counted
from tcl.cli.args import (
    add_rpc,
    fraction,
    given,
    network_names,
    network_spec,
    output_dir,
    platform_name,
    positive_int,
    rpc,
)
from tcl.tuning.layout import CONV_LAYOUTS
from tcl.tuning.options import COST_MODELS, SEARCH_GUIDE


def add_commands(commands: Any) -> None:
    collect = commands.add_parser("collect", help="measure programs of zoo networks' tasks")
    collect.add_argument(
        "--network",
        required=True,
        type=network_spec,
        help="a zoo network, a comma-separated list, 'all', 'training' or 'held-out'",
    )
    collect.add_argument(
        "--platform",
        required=True,
        type=platform_name,
        help="a platform preset (tcl.tuning.platforms)",
    )
    collect.add_argument("--programs-per-task", type=positive_int)
    collect.add_argument(
        "--out", required=True, type=output_dir, help="collection root; DIR/<platform>-<id>/"
    )
    add_rpc(collect)
    collect.add_argument(
        "--pool-only",
        action="store_true",
        help="store unmeasured candidates (a pool for tcl sample) in OUT/.../pool",
    )
    collect.add_argument(
        "--search",
        action="store_true",
        help="draw the programs as a tuner does: MetaSchedule's evolutionary search on each "
        "task, guided by --cost-model and started from the task's measured programs, keeping "
        "every candidate it measures, in OUT/.../search (of training networks: not the tasks "
        "a held-out network shares)",
    )
    collect.add_argument(
        "--cost-model",
        choices=COST_MODELS,
        help=f"with --search: the model that guides it (default {SEARCH_GUIDE})",
    )
    collect.add_argument(
        "--model",
        dest="model_path",
        metavar="PATH",
        help="with --search and a cost model of tcl's: the checkpoint that guides it (default: "
        "the packaged base model), so that its next training set holds what its search picks",
    )
    collect.add_argument(
        "--per-round", type=positive_int, help="with --search: programs measured a round"
    )
    collect.add_argument(
        "--conv-layout",
        choices=sorted(CONV_LAYOUTS),
        help="with --search: search the 2-D convolutions in this layout (as tcl tune "
        "--conv-layout tunes them), into OUT/.../search-<layout>",
    )
    collect.add_argument("--max-tasks", type=positive_int, help="only the first N tasks")
    collect.add_argument("--tiny", action="store_true", help="small input shapes (for tests)")
    collect.add_argument("--max-minutes", type=float, help="stop after this long (resume later)")
    collect.add_argument("--seed", type=int)
    collect.add_argument(
        "--verbose", action="store_true", help="show TVM's warnings on the terminal too"
    )
    collect.set_defaults(func=run_collect)

    act = commands.add_parser("active", help="pool -> RDU sample -> measure -> train, in rounds")
    act.add_argument("--network", required=True, type=network_spec, help="as for tcl collect")
    act.add_argument("--platform", required=True, type=platform_name)
    act.add_argument("--budget", type=fraction, help="fraction of each task's pool")
    act.add_argument("--rounds", type=positive_int)
    act.add_argument("--pool-size", type=positive_int, help="programs per task")
    act.add_argument("--steps", type=positive_int, help="training steps per round")
    act.add_argument(
        "--out", required=True, type=output_dir, help="root; DIR/<platform>-<id>/ is used"
    )
    act.add_argument("--tiny", action="store_true")
    act.add_argument(
        "--base",
        help="start from this model ('default': the packaged base model): its embeddings and "
        "uncertainty pick round 1 and every round fine-tunes it",
    )
    act.set_defaults(func=run_active)


def run_collect(args: argparse.Namespace) -> int:
    from tcl.integrations.tvm.console import native_stderr_to
    from tcl.tuning import platforms

    if args.search and (args.pool_only or args.rpc_tracker):
        raise ValueError("--search measures on this machine: not with --pool-only or --rpc-tracker")
    if not args.search and (
        args.cost_model or args.per_round or args.model_path or args.conv_layout
    ):
        raise ValueError(
            "--cost-model, --model, --per-round and --conv-layout are options of --search"
        )
    platform = platforms.get(args.platform)
    out = Path(args.out) / f"{platform.name}-{platform.id}"
    print(
        f"collecting for {platform.name} ({platform.target}, "
        f"{counted(platform.threads, 'thread')}, host {platform.host.cpu_model}) into {out}"
    )
    # What TVM's C++ code prints while building and measuring goes to the store's log.
    native_log = None if args.verbose else out / "logs" / "tvm_native.log"
    if native_log is not None:
        print(f"TVM's log: {native_log} (--verbose shows it here)")
    with native_stderr_to(native_log):
        summary = _search(args, platform, out) if args.search else _collect(args, platform, out)
    print("\n".join(summary.lines()))
    return 0


def _collect(args: argparse.Namespace, platform: Any, out: Path) -> Any:
    from tcl.tuning.collect import collect

    return collect(
        network_names(args.network),
        platform,
        out,
        rpc=rpc(args),
        pool_only=args.pool_only,
        max_tasks=args.max_tasks,
        tiny=args.tiny,
        max_seconds=args.max_minutes * 60 if args.max_minutes else None,
        progress=args.progress,
        **given(args, programs_per_task="programs_per_task", seed="seed"),
    )


def _search(args: argparse.Namespace, platform: Any, out: Path) -> Any:
    from tcl import zoo
    from tcl.tuning.collect_search import collect_search

    networks = network_names(args.network)
    return collect_search(
        networks,
        platform,
        out,
        # training data: no task a held-out network shares (never learnt from, so never measured)
        skip_networks=() if set(networks) & set(zoo.HELD_OUT) else zoo.HELD_OUT,
        max_tasks=args.max_tasks,
        tiny=args.tiny,
        max_seconds=args.max_minutes * 60 if args.max_minutes else None,
        progress=args.progress,
        **given(
            args,
            programs_per_task="programs_per_task",
            seed="seed",
            cost_model="cost_model",
            model_path="model_path",
            per_round="per_round",
            conv_layout="conv_layout",
        ),
    )


def run_active(args: argparse.Namespace) -> int:
    from tcl.tuning import platforms
    from tcl.tuning.active import active

    platform = platforms.get(args.platform)
    base = args.base
    if base == "default":
        from tcl.model import base_model_path

        base = str(base_model_path())
    summary = active(
        network_names(args.network),
        platform,
        Path(args.out) / f"{platform.name}-{platform.id}",
        tiny=args.tiny,
        base=base,
        progress=args.progress,
        **given(args, budget="budget", rounds="rounds", pool_size="pool_size", train_steps="steps"),
    )
    print("\n".join(summary.lines()))
    return 0
