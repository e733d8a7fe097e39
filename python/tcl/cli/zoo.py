"""``tcl zoo list|tasks``: the networks tcl collects and tunes, and their tuning tasks."""

from __future__ import annotations

import argparse
from typing import Any

from tcl._format import counted
from tcl.cli.args import given, network_name, platform_name, positive_int


def add_commands(commands: Any) -> None:
    from tcl.tuning.platforms import DEFAULT_PLATFORM

    zoo = commands.add_parser("zoo", help="the network zoo")
    zoo_commands = zoo.add_subparsers(dest="zoo_command", required=True)
    zoo_commands.add_parser("list", help="list the networks").set_defaults(func=list_networks)
    tasks = zoo_commands.add_parser("tasks", help="tuning tasks of a network")
    tasks.add_argument("network", type=network_name)
    tasks.add_argument("--platform", default=DEFAULT_PLATFORM, type=platform_name)
    tasks.add_argument("--batch", type=positive_int, help="default: 1")
    tasks.add_argument("--tiny", action="store_true", help="the small test input shape")
    tasks.set_defaults(func=list_tasks)


def list_networks(args: argparse.Namespace) -> int:
    from tcl import zoo

    for name, net in zoo.NETWORKS.items():
        role = "held-out" if net.held_out else "training"
        print(f"{name:20s} {role:9s} input {net.input_dtype} {net.input_shape}")
    return 0


def list_tasks(args: argparse.Namespace) -> int:
    from tcl import zoo
    from tcl.tuning import platforms

    platform = platforms.get(args.platform)
    target = platform.tvm_target()
    tasks = zoo.extract(args.network, target, tiny=args.tiny, **given(args, batch="batch"))
    for task in tasks:
        print(f"{task.name:48s} weight {task.weight:3d}  {task.flops / 1e6:12.3f} MFLOP")
    total = sum(t.weight * t.flops for t in tasks)
    print(f"{counted(len(tasks), 'task')}, {total / 1e9:.3f} GFLOP per inference")
    return 0
