"""The ``tcl`` command line. Heavy imports (tvm, torch, faiss) stay inside the commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from tcl.cli_args import (
    Parser,
    fraction,
    network_name,
    network_spec,
    output_dir,
    output_file,
    platform_name,
    positive_int,
)
from tcl.errors import TclError

if TYPE_CHECKING:
    from tcl.tune import TuneReport


def _read(args: argparse.Namespace) -> tuple[object, float]:
    from tcl.records import read_records

    start = time.perf_counter()
    rs = read_records(args.paths, strict=not args.lenient, num_threads=args.threads)
    return rs, time.perf_counter() - start


def cmd_records_stats(args: argparse.Namespace) -> int:
    from tcl.records import RecordSet
    from tcl.stats import format_summary, summarize

    rs, seconds = _read(args)
    assert isinstance(rs, RecordSet)
    summary = summarize(rs)
    summary["seconds"] = round(seconds, 4)
    if args.json:
        print(json.dumps(summary))
    else:
        print(format_summary(summary))
        print(f"read in      {seconds:.3f} s ({len(rs) / max(seconds, 1e-9):,.0f} records/s)")
    return 0


def cmd_records_convert(args: argparse.Namespace) -> int:
    from tcl.records import RecordSet

    rs, seconds = _read(args)
    assert isinstance(rs, RecordSet)
    rs.save(args.output)
    size = Path(args.output).stat().st_size
    print(
        f"wrote {len(rs):,} records ({len(rs.tasks):,} tasks) to {args.output} "
        f"({size / 1e6:.1f} MB) after reading for {seconds:.3f} s"
    )
    return 0


def sample_data_path() -> Path:
    """The bundled sample MetaSchedule database (real measurements, see the README)."""
    return Path(str(resources.files("tcl") / "data" / "sample"))


def _rpc(args: argparse.Namespace) -> tuple[str, int, str] | None:
    """(host, port, key) of ``--rpc-tracker HOST:PORT --rpc-key KEY``, or None."""
    if not args.rpc_tracker:
        return None
    host, _, port = args.rpc_tracker.rpartition(":")
    if not host or not port.isdigit() or not args.rpc_key:
        raise ValueError("--rpc-tracker takes HOST:PORT and needs --rpc-key")
    return (host, int(port), args.rpc_key)


def cmd_quickstart(args: argparse.Namespace) -> int:
    """Tunes a zoo network on this CPU with the packaged base model: the README's main job."""
    from tcl import platforms
    from tcl.model import base_model_path
    from tcl.records import read_records
    from tcl.tune import tune_network

    start = time.perf_counter()
    rs = read_records(sample_data_path())
    print(
        f"tcl quickstart: record core read {len(rs)} bundled MetaSchedule records in "
        f"{(time.perf_counter() - start) * 1e3:.1f} ms"
    )
    platform = platforms.get(args.platform)
    print(
        f"tuning {args.network} on {platform.name} ({platform.threads} threads, target "
        f"{json.dumps(platform.target)}) for {args.trials} trials with the packaged base model "
        f"{base_model_path().name}"
    )
    _before_tuning(args, platform.threads)
    report = tune_network(
        args.network,
        platform,
        args.trials,
        args.work_dir,
        cost_model="tcl",
        tiny=args.tiny,
        verbose=args.verbose,
    )
    print("\n".join(report.lines()))
    _write_outputs(report, args)
    return 0


def _before_tuning(args: argparse.Namespace, threads: int) -> None:
    """Where MetaSchedule's log goes, and a warning when other processes keep the CPU busy:
    measurements then rank programs by the noise (a 2-thread TVM runtime with one core taken
    ran a tuned network 80x slower)."""
    from tcl.timing import machine_load

    if not args.verbose:
        print(f"MetaSchedule's log: {Path(args.work_dir) / 'logs'} (--verbose shows it here)")
    load = machine_load()
    if load.busy:
        print(
            f"warning: {load.text()}; tuning measures {threads}-thread programs on it, so its "
            "measurements and timings will be slow and noisy: tune on a quiet machine"
        )


def cmd_zoo_list(args: argparse.Namespace) -> int:
    from tcl import zoo

    for name, net in zoo.NETWORKS.items():
        role = "held-out" if net.held_out else "training"
        print(f"{name:20s} {role:9s} input {net.input_dtype} {net.input_shape}")
    return 0


def cmd_zoo_tasks(args: argparse.Namespace) -> int:
    from tcl import platforms, zoo
    from tcl.integrations.tvm_patches import patch_inspect_stack

    patch_inspect_stack()
    platform = platforms.get(args.platform)
    tasks = zoo.extract(args.network, platform.tvm_target(), batch=args.batch, tiny=args.tiny)
    for task in tasks:
        print(f"{task.name:48s} weight {task.weight:3d}  {task.flops / 1e6:12.3f} MFLOP")
    total = sum(t.weight * t.flops for t in tasks)
    print(f"{len(tasks)} tasks, {total / 1e9:.3f} GFLOP per inference")
    return 0


def network_names(spec: str) -> list[str]:
    from tcl import zoo

    if spec == "all":
        return zoo.names()
    if spec == "training":
        return list(zoo.TRAINING)
    if spec == "held-out":
        return list(zoo.HELD_OUT)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    for name in names:
        zoo.get(name)
    return names


def cmd_collect(args: argparse.Namespace) -> int:
    from tcl import platforms
    from tcl.collect import collect

    platform = platforms.get(args.platform)
    rpc = _rpc(args)
    out = Path(args.out) / f"{platform.name}-{platform.id}"
    print(
        f"collecting for {platform.name} ({platform.target}, {platform.threads} thread(s), "
        f"host {platform.host.cpu_model}) into {out}"
    )
    summary = collect(
        network_names(args.network),
        platform,
        out,
        programs_per_task=args.programs_per_task,
        rpc=rpc,
        pool_only=args.pool_only,
        max_tasks=args.max_tasks,
        tiny=args.tiny,
        seed=args.seed,
        max_seconds=args.max_minutes * 60 if args.max_minutes else None,
    )
    print("\n".join(summary.lines()))
    return 0


def _split(spec: str) -> list[str]:
    return [s.strip() for s in spec.split(",") if s.strip()]


def cmd_train(args: argparse.Namespace) -> int:
    from tcl import model
    from tcl.dataset import Dataset, load_dataset
    from tcl.platforms import DESCRIPTOR_FEATURES
    from tcl.splits import split_within_task
    from tcl.train import TrainConfig, train

    data = load_dataset(args.records)
    holdout = data.check_networks(_split(args.holdout), "--holdout")
    training = data.without_networks(holdout)
    fit, val = split_within_task(training.records, 0.2, seed=args.seed)
    config = model.ModelConfig(
        arch=args.model,
        vocab_size=len(data.records.vocab),
        num_fields=data.records.tokenizer.num_fields,
        max_len=data.records.tokenizer.max_len,
        platform_features=len(DESCRIPTOR_FEATURES) if args.platform_input else 0,
    )
    print(
        f"training {args.model} on {len(fit):,} records of {len(set(fit.columns['task'])):,} tasks "
        f"(validation {len(val):,}); held out: {', '.join(holdout) or 'none'}"
    )
    net, history = train(
        Dataset(fit, data.networks, data.names),
        Dataset(val, data.networks, data.names),
        config,
        TrainConfig(loss=args.loss, max_steps=args.steps, seed=args.seed),
    )
    model.save(
        args.out,
        net,
        data.records.vocab,
        data.records.tokenizer,
        {"holdout": holdout, "history": history},
    )
    print(
        f"best validation top-1 {history['best_val_top1']:.4f} after {history['seconds']:.0f} s; "
        f"wrote {args.out} ({model.parameter_bytes(net) / 1e6:.3f} MB of parameters)"
    )
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from tcl import model
    from tcl.dataset import load_dataset
    from tcl.metrics import evaluate
    from tcl.train import predict

    net, vocab, tokenizer, extra = model.load(args.model)
    data = load_dataset(args.records, vocab=vocab, tokenizer=tokenizer)
    requested = data.check_networks(_split(args.networks), "--networks")
    held_out = [n for n in extra.get("holdout", []) if n in data.network_names()]
    networks = requested or held_out or data.network_names()
    subset = data.of_networks(networks) if networks else data
    result = evaluate(subset, predict(net, subset.records), networks)
    if args.json:
        print(json.dumps(result))
        return 0
    for name, scores in result["per_network"].items():  # type: ignore[attr-defined]
        print(f"{name:20s} top-1 {scores['top1']:.4f}  top-5 {scores['top5']:.4f}")
    print(
        f"{'pooled':20s} top-1 {result['top1']:.4f}  top-5 {result['top5']:.4f}  "
        f"pairwise accuracy {result['pairwise_accuracy']:.4f} on {result['records']:,} records"
    )
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    from tcl import sampler
    from tcl.records import read_records

    if args.model:
        from tcl import model as models

        net, vocab, tokenizer, _ = models.load(args.model)
        rs = read_records(args.pool, vocab=vocab, tokenizer=tokenizer)
        points = sampler.model_embeddings(net, rs)
        uncertainty = sampler.model_uncertainty(net, rs)
    else:
        rs = read_records(args.pool)
        points, uncertainty = sampler.token_features(rs), None
    measured = rs.columns["error"] >= 0  # anything measured (or failed) needs no new measurement
    rows = sampler.select_per_task(
        points, rs.columns["task"], args.fraction, uncertainty=uncertainty, measured=measured
    )
    with open(args.output, "w") as f:
        for row in rows:
            f.write(
                json.dumps(
                    {
                        "file": rs.files[int(rs.columns["file"][row])],
                        "line": int(rs.columns["line"][row]),
                        "task": int(rs.columns["task"][row]),
                    }
                )
                + "\n"
            )
    print(
        f"selected {len(rows):,} of {len(rs):,} programs in {len(set(rs.columns['task'])):,} "
        f"tasks ({'model embeddings, MC-dropout' if args.model else 'token features'}); "
        f"wrote {args.output}"
    )
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from tcl import platforms
    from tcl.tune import tune_network

    platform = platforms.get(args.platform)
    if platform.is_cuda:
        raise ValueError(f"{platform.name} needs a CUDA GPU to measure on; none is attached here")
    _before_tuning(args, platform.threads)
    report = tune_network(
        args.network,
        platform,
        args.trials,
        args.work_dir,
        cost_model=args.cost_model,
        model_path=args.model,
        tiny=args.tiny,
        rpc=_rpc(args),
        verbose=args.verbose,
    )
    print("\n".join(report.lines()))
    _write_outputs(report, args)
    return 0


def _write_outputs(report: TuneReport, args: argparse.Namespace) -> None:
    """The JSON report and the PNG of its curve (default: in the work directory)."""
    from tcl.tune import plot_curves, write_report

    json_path = Path(args.json or Path(args.work_dir) / "report.json")
    png_path = Path(args.png or json_path.with_suffix(".png"))
    write_report(report, json_path)
    plot_curves([report], png_path, f"{report.network} on {report.platform}")
    print(f"report {json_path}; latency curves {png_path}")


def cmd_distill(args: argparse.Namespace) -> int:
    from tcl import distill, sampler
    from tcl import model as models
    from tcl.dataset import check_network_names, load_dataset
    from tcl.platforms import records_descriptor

    if args.base.endswith(".chain"):
        chain = distill.Chain.load(args.base)
        vocab, tokenizer = models.load(args.base[: -len(".chain")])[1:3]
    else:
        kb, vocab, tokenizer, _ = models.load(args.base)
        chain = distill.Chain(kb)  # type: ignore[arg-type]
    targets = [load_dataset(t, vocab=vocab, tokenizer=tokenizer) for t in args.target]
    known = sorted({n for data in targets for n in data.network_names()})
    holdout = check_network_names(_split(args.holdout), known, "--holdout")
    for target, everything in zip(args.target, targets, strict=True):
        data = everything.without_networks(holdout)
        rs = data.records
        platform = records_descriptor(rs) if len(rs) else None
        if not args.platform_input or (chain.platforms and not chain.descriptors):
            platform = None  # a chain started without descriptors goes on without them
        # The target data a user can afford: RDU's pick of each task's records, in the KB's space.
        scorer = chain.scorer(chain.platforms[-1]) if chain.platforms else chain.kb
        rows = sampler.select_per_task(
            sampler.model_embeddings(scorer, data.records),
            data.records.columns["task"],
            args.fraction,
            uncertainty=sampler.model_uncertainty(scorer, data.records),
        )
        config = distill.DistillConfig(
            progress_steps=args.steps,
            compress_steps=args.steps,
            seed=args.seed,
            **({} if args.ewc_lambda is None else {"ewc_lambda": args.ewc_lambda}),
        )
        # Progress learns from the measured pick; compress distils on every program of the
        # directory (their measurements unused), as it would on an unmeasured pool.
        chain = distill.step(chain, data.subset(rows), target, config, data, platform)
        print(f"moved to {target} with {len(rows):,} of {len(data.records):,} records")
    extra = {"platforms": chain.platforms, "descriptors": chain.descriptors}
    models.save(args.output, chain.kb, vocab, tokenizer, extra)
    chain.save(args.output + ".chain")
    print(f"wrote {args.output} and {args.output}.chain after {len(chain.platforms)} platform(s)")
    return 0


def _base_model(name: str | None) -> str | None:
    if name == "default":
        from tcl.model import base_model_path

        return str(base_model_path())
    return name


def cmd_active(args: argparse.Namespace) -> int:
    from tcl import platforms
    from tcl.active import active

    platform = platforms.get(args.platform)
    out = Path(args.out) / f"{platform.name}-{platform.id}"
    summary = active(
        network_names(args.network),
        platform,
        out,
        budget=args.budget,
        rounds=args.rounds,
        pool_size=args.pool_size,
        train_steps=args.steps,
        tiny=args.tiny,
        base=_base_model(args.base),
    )
    print("\n".join(summary.lines()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="tcl", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    records = commands.add_parser("records", help="read, summarize and convert measured records")
    records_commands = records.add_subparsers(dest="records_command", required=True)
    for name, func, text in (
        ("stats", cmd_records_stats, "summarize record files"),
        ("convert", cmd_records_convert, "write a binary RecordSet (.tcl)"),
    ):
        sub = records_commands.add_parser(name, help=text)
        sub.add_argument("paths", nargs="+", help="files, directories, globs; .gz is read too")
        sub.add_argument("--lenient", action="store_true", help="skip bad lines and count them")
        sub.add_argument("--threads", type=int, default=0, help="parser threads (0: all cores)")
        if name == "stats":
            sub.add_argument("--json", action="store_true", help="print one JSON object")
        else:
            sub.add_argument(
                "-o", "--output", required=True, type=output_file, help="output file (.tcl)"
            )
        sub.set_defaults(func=func)

    zoo = commands.add_parser("zoo", help="the network zoo")
    zoo_commands = zoo.add_subparsers(dest="zoo_command", required=True)
    zoo_commands.add_parser("list", help="list the networks").set_defaults(func=cmd_zoo_list)
    tasks = zoo_commands.add_parser("tasks", help="tuning tasks of a network")
    tasks.add_argument("network", type=network_name)
    tasks.add_argument("--platform", default="cpu-native-2t", type=platform_name)
    tasks.add_argument("--batch", type=positive_int, default=1)
    tasks.add_argument("--tiny", action="store_true", help="the small test input shape")
    tasks.set_defaults(func=cmd_zoo_tasks)

    collect = commands.add_parser("collect", help="measure programs of zoo networks' tasks")
    collect.add_argument(
        "--network",
        required=True,
        type=network_spec,
        help="a zoo network, a comma-separated list, 'all', 'training' or 'held-out'",
    )
    collect.add_argument(
        "--platform", required=True, type=platform_name, help="a platform preset (tcl.platforms)"
    )
    collect.add_argument("--programs-per-task", type=positive_int, default=48)
    collect.add_argument(
        "--out", required=True, type=output_dir, help="collection root; DIR/<platform>-<id>/"
    )
    collect.add_argument("--rpc-tracker", help="HOST:PORT of a TVM RPC tracker to measure through")
    collect.add_argument("--rpc-key", help="device key registered with the tracker")
    collect.add_argument(
        "--pool-only",
        action="store_true",
        help="store unmeasured candidates (a pool for tcl sample) in OUT/.../pool",
    )
    collect.add_argument("--max-tasks", type=positive_int, help="only the first N tasks")
    collect.add_argument("--tiny", action="store_true", help="small input shapes (for tests)")
    collect.add_argument("--max-minutes", type=float, help="stop after this long (resume later)")
    collect.add_argument("--seed", type=int, default=0)
    collect.set_defaults(func=cmd_collect)

    train = commands.add_parser("train", help="train a cost model on measured records")
    train.add_argument("records", nargs="+", help="collection directories or record files")
    train.add_argument("--out", required=True, type=output_file, help="checkpoint to write (.pt)")
    train.add_argument("--model", default="mamba", choices=["mamba", "attention", "lstm"])
    train.add_argument("--holdout", default="", help="comma-separated networks never trained on")
    train.add_argument("--loss", default="lambdarank", choices=["lambdarank", "mse"])
    train.add_argument("--steps", type=positive_int, default=2000)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument(
        "--platform-input",
        action="store_true",
        help="the model reads each record's platform descriptor (records of several platforms: "
        "one model ranks for each; the tuner binds the target's)",
    )
    train.set_defaults(func=cmd_train)

    evaluate = commands.add_parser("eval", help="top-k of a trained cost model on records")
    evaluate.add_argument("model", help="a checkpoint written by tcl train")
    evaluate.add_argument("records", nargs="+")
    evaluate.add_argument("--networks", default="", help="comma-separated (default: the holdout)")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(func=cmd_eval)

    sample = commands.add_parser(
        "sample", help="choose the programs of a pool worth measuring (RDU)"
    )
    sample.add_argument("pool", nargs="+", help="a pool (tcl collect --pool-only) or records")
    sample.add_argument("--model", help="a cost model checkpoint (uncertainty and embeddings)")
    sample.add_argument("--fraction", type=fraction, default=0.1, help="of each task's pool")
    sample.add_argument(
        "-o", "--output", required=True, type=output_file, help="selection file (JSON lines)"
    )
    sample.set_defaults(func=cmd_sample)

    tune = commands.add_parser("tune", help="tune a zoo network with MetaSchedule")
    tune.add_argument("--network", required=True, type=network_name)
    tune.add_argument("--platform", default="cpu-native-2t", type=platform_name)
    tune.add_argument("--trials", type=positive_int, default=200)
    tune.add_argument("--cost-model", default="tcl", choices=["tcl", "xgb", "mlp", "random"])
    tune.add_argument(
        "--model",
        help="tcl checkpoint for --cost-model tcl (default: the base model), or an MLP state "
        "saved by tcl (.npz, tcl.integrations.mlp_state) for --cost-model mlp",
    )
    tune.add_argument(
        "--work-dir", default="tcl-tune", type=output_dir, help="tuning database and logs"
    )
    tune.add_argument("--tiny", action="store_true", help="the small test input shape")
    tune.add_argument("--rpc-tracker", help="HOST:PORT of a TVM RPC tracker to measure through")
    tune.add_argument("--rpc-key", help="device key registered with the tracker")
    tune.add_argument("--json", type=output_file, help="report path (default WORK_DIR/report.json)")
    tune.add_argument(
        "--png", type=output_file, help="latency-curve plot (default: the report's path, .png)"
    )
    tune.add_argument(
        "--verbose", action="store_true", help="show MetaSchedule's log on the terminal too"
    )
    tune.set_defaults(func=cmd_tune)

    dist = commands.add_parser("distill", help="move a cost model to new platforms (continual KD)")
    dist.add_argument(
        "--base", required=True, help="checkpoint (tcl train) or chain state (.chain)"
    )
    dist.add_argument(
        "--target",
        nargs="+",
        required=True,
        help="one collection directory per platform, moved through in order",
    )
    dist.add_argument(
        "--fraction", type=fraction, default=0.1, help="of each target task's records"
    )
    dist.add_argument("--holdout", default="", help="networks never trained on")
    dist.add_argument(
        "-o", "--output", required=True, type=output_file, help="checkpoint (+ OUTPUT.chain)"
    )
    dist.add_argument(
        "--steps", type=positive_int, default=300, help="of each phase (progress, compress)"
    )
    dist.add_argument(
        "--ewc-lambda", type=float, default=None, help="EWC strength (default: DistillConfig's)"
    )
    dist.add_argument(
        "--platform-input",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the model reads each platform's descriptor (from the records' target)",
    )
    dist.add_argument("--seed", type=int, default=0)
    dist.set_defaults(func=cmd_distill)

    act = commands.add_parser("active", help="pool -> RDU sample -> measure -> train, in rounds")
    act.add_argument("--network", required=True, type=network_spec, help="as for tcl collect")
    act.add_argument("--platform", required=True, type=platform_name)
    act.add_argument("--budget", type=fraction, default=0.1, help="fraction of each task's pool")
    act.add_argument("--rounds", type=positive_int, default=3)
    act.add_argument("--pool-size", type=positive_int, default=500, help="programs per task")
    act.add_argument("--steps", type=positive_int, default=600, help="training steps per round")
    act.add_argument(
        "--out", required=True, type=output_dir, help="root; DIR/<platform>-<id>/ is used"
    )
    act.add_argument("--tiny", action="store_true")
    act.add_argument(
        "--base",
        help="start from this model ('default': the packaged base model): its embeddings and "
        "uncertainty pick round 1 and every round fine-tunes it",
    )
    act.set_defaults(func=cmd_active)

    quickstart = commands.add_parser(
        "quickstart", help="tune a network on this CPU with the packaged base model"
    )
    quickstart.add_argument("--network", default="bert_tiny", type=network_name)
    quickstart.add_argument("--platform", default="cpu-native-2t", type=platform_name)
    quickstart.add_argument("--trials", type=positive_int, default=300)
    quickstart.add_argument("--work-dir", default="tcl-quickstart", type=output_dir)
    quickstart.add_argument("--tiny", action="store_true", help="the small test input shape")
    quickstart.add_argument(
        "--json", type=output_file, help="report path (default WORK_DIR/report.json)"
    )
    quickstart.add_argument(
        "--png", type=output_file, help="latency-curve plot (default: the report's path, .png)"
    )
    quickstart.add_argument(
        "--verbose", action="store_true", help="show MetaSchedule's log on the terminal too"
    )
    quickstart.set_defaults(func=cmd_quickstart)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # a command-line error (one line already printed) or --help
        return done.code if isinstance(done.code, int) else 2
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed stdout fails here, inside this handler, not at exit
        return code
    except (TclError, FileNotFoundError, ValueError) as err:
        print(f"tcl: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (`tcl records stats ... | head`): stop quietly, and
        # keep Python from failing again while it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
