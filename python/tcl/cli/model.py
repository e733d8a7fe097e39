"""``tcl train``, ``tcl eval`` and ``tcl distill``: a cost model from measured records, its
ranking quality on held-out networks, and its move to new platforms."""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
from typing import TYPE_CHECKING, Any

from tcl.cli.args import fraction, given, output_file, positive_int, split_names

if TYPE_CHECKING:
    from tcl.records.dataset import Dataset
    from tcl.training.distill import Chain, DistillConfig


def add_commands(commands: Any) -> None:
    train = commands.add_parser("train", help="train a cost model on measured records")
    train.add_argument("records", nargs="+", help="collection directories or record files")
    train.add_argument("--out", required=True, type=output_file, help="checkpoint to write (.pt)")
    train.add_argument("--model", choices=["mamba", "attention", "lstm"])
    train.add_argument("--holdout", default="", help="comma-separated networks never trained on")
    train.add_argument(
        "--loss",
        choices=["lambdarank", "lambdarank-top", "mse"],
        help="lambdarank (default); lambdarank-top: mistakes among the near-best cost most",
    )
    train.add_argument("--steps", type=positive_int)
    train.add_argument("--seed", type=int)
    train.add_argument(
        "--device", choices=["cpu", "cuda"], help="where to train (default cpu; cuda: a GPU)"
    )
    train.add_argument(
        "--platform-input",
        action="store_true",
        help="the model reads each record's platform descriptor (records of several platforms: "
        "one model ranks for each; the tuner binds the target's)",
    )
    train.set_defaults(func=run_train)

    evaluate = commands.add_parser("eval", help="top-k of a trained cost model on records")
    evaluate.add_argument("model", help="a checkpoint written by tcl train")
    evaluate.add_argument("records", nargs="+")
    evaluate.add_argument("--networks", default="", help="comma-separated (default: the holdout)")
    evaluate.add_argument("--json", action="store_true")
    evaluate.set_defaults(func=run_eval)

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
    dist.add_argument("--fraction", type=fraction, help="of each target task's records")
    dist.add_argument("--holdout", default="", help="networks never trained on")
    dist.add_argument(
        "-o", "--output", required=True, type=output_file, help="checkpoint (+ OUTPUT.chain)"
    )
    dist.add_argument("--steps", type=positive_int, help="of each phase (progress, compress)")
    dist.add_argument("--ewc-lambda", type=float, help="EWC strength")
    dist.add_argument(
        "--platform-input",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the model reads each platform's descriptor (from the records' target)",
    )
    dist.add_argument("--seed", type=int)
    dist.add_argument(
        "--members",
        type=positive_int,
        default=1,
        help="the moves run in seeds SEED.. and averaged into one model of the usual size "
        "(a model soup: moved through several hosts, it holds them better than one seed)",
    )
    dist.set_defaults(func=run_distill)


def run_train(args: argparse.Namespace) -> int:
    from tcl import model
    from tcl.records.dataset import Dataset, load_dataset
    from tcl.records.splits import split_within_task
    from tcl.training.train import TrainConfig, train
    from tcl.tuning.platforms import DESCRIPTOR_FEATURES

    data = load_dataset(args.records, progress=args.progress)
    holdout = data.check_networks(split_names(args.holdout), "--holdout")
    settings = TrainConfig(
        **given(args, loss="loss", max_steps="steps", seed="seed", device="device")
    )
    fit, val = split_within_task(data.without_networks(holdout).records, 0.2, seed=settings.seed)
    config = model.ModelConfig(
        vocab_size=len(data.records.vocab),
        num_fields=data.records.tokenizer.num_fields,
        max_len=data.records.tokenizer.max_len,
        platform_features=len(DESCRIPTOR_FEATURES) if args.platform_input else 0,
        **given(args, arch="model"),
    )
    print(
        f"training {config.arch} on {len(fit):,} records of {len(set(fit.columns['task'])):,} "
        f"tasks (validation {len(val):,}); held out: {', '.join(holdout) or 'none'}"
    )
    net, history = train(
        Dataset(fit, data.networks, data.names),
        Dataset(val, data.networks, data.names),
        config,
        settings,
        progress=args.progress,
    )
    extra = {"holdout": holdout, "history": history}
    model.save(args.out, net, data.records.vocab, data.records.tokenizer, extra)
    print(
        f"best validation top-1 {history['best_val_top1']:.4f} after {history['seconds']:.0f} s; "
        f"wrote {args.out} ({model.parameter_bytes(net) / 1e6:.3f} MB of parameters)"
    )
    return 0


def run_eval(args: argparse.Namespace) -> int:
    from tcl import model
    from tcl.model.inputs import predict
    from tcl.records.dataset import load_dataset
    from tcl.training.metrics import evaluate

    net, vocab, tokenizer, extra = model.load(args.model)
    data = load_dataset(args.records, vocab=vocab, tokenizer=tokenizer, progress=args.progress)
    requested = data.check_networks(split_names(args.networks), "--networks")
    held_out = [n for n in extra.get("holdout", []) if n in data.network_names()]
    networks = requested or held_out or data.network_names()
    subset = data.of_networks(networks) if networks else data
    scores = predict(net, subset.records, progress=args.progress)
    result = evaluate(subset, scores, networks)
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


def _check_pick_ranks(target: str, data: Any, picked: Any, fraction: float) -> None:
    """Progress learns to rank within a task (``task_groups``: tasks of two records or more), so
    the pick needs one; a search-drawn store (a few programs a task) has none at the default 10%."""
    from tcl.records.recordset import rows_by_task
    from tcl.training.train import task_groups

    if task_groups(picked.records):
        return
    most = max(map(len, rows_by_task(data.records.columns["task"])), default=0)
    raise ValueError(
        f"{target}: --fraction {fraction:g} of each task's records leaves no task two programs to "
        f"rank (its tasks hold at most {most}); pass a larger --fraction (1 learns every record)"
    )


def run_distill(args: argparse.Namespace) -> int:
    from tcl import model as models
    from tcl.records.dataset import check_network_names, load_dataset
    from tcl.training import distill
    from tcl.tuning.platforms import collection_platform

    if args.base.endswith(".chain"):
        start = distill.Chain.load(args.base)
        vocab, tokenizer, base_extra = models.load(args.base[: -len(".chain")])[1:]
    else:
        kb, vocab, tokenizer, base_extra = models.load(args.base)
        start = distill.Chain(kb)  # type: ignore[arg-type]
    targets = [
        load_dataset(t, vocab=vocab, tokenizer=tokenizer, progress=args.progress)
        for t in args.target
    ]
    known = sorted({n for data in targets for n in data.network_names()})
    holdout = check_network_names(split_names(args.holdout), known, "--holdout")
    config = distill.DistillConfig(
        **given(
            args,
            progress_steps="steps",
            compress_steps="steps",
            target_fraction="fraction",
            ewc_lambda="ewc_lambda",
            seed="seed",
        ),
        progress=args.progress,
    )
    chains = []
    for member in range(args.members):
        seeded = dataclasses.replace(config, seed=config.seed + member)
        if args.members > 1:
            print(f"member {member + 1} of {args.members} (seed {seeded.seed})")
        chains.append(_moved(copy.deepcopy(start), args, targets, holdout, seeded))
    chain = chains[0] if len(chains) == 1 else distill.Chain.averaged(chains)
    # The machines the model has been moved to, kept through every later move: tcl tune warns
    # when it tunes for another (a move to one CPU has ranked another CPU's programs worse).
    moved_to = models.moves_in(base_extra) + [
        p for p in map(collection_platform, args.target) if p is not None
    ]
    extra = {"platforms": chain.platforms, "descriptors": chain.descriptors, "moved_to": moved_to}
    if args.members > 1:
        extra["members"] = args.members
    models.save(args.output, chain.kb, vocab, tokenizer, extra)
    chain.save(args.output + ".chain")
    print(f"wrote {args.output} and {args.output}.chain after {len(chain.platforms)} platform(s)")
    return 0


def _moved(
    chain: Chain,
    args: argparse.Namespace,
    targets: list[Dataset],
    holdout: list[str],
    config: DistillConfig,
) -> Chain:
    """``chain`` moved through ``targets`` in order (one seed of tcl distill)."""
    from tcl.training import distill
    from tcl.tuning.platforms import records_descriptor

    for target, everything in zip(args.target, targets, strict=True):
        data = everything.without_networks(holdout)
        rs = data.records
        platform = records_descriptor(rs) if len(rs) else None
        if not args.platform_input or (chain.platforms and not chain.descriptors):
            platform = None  # a chain started without descriptors goes on without them
        rows = distill.pick_target(chain, data, config)
        picked = data.subset(rows)
        _check_pick_ranks(target, data, picked, config.target_fraction)
        # Progress learns from the measured pick; compress distils on every program of the
        # directory (their measurements unused), as it would on an unmeasured pool.
        chain = distill.step(chain, picked, target, config, data, platform)
        print(f"moved to {target} with {len(rows):,} of {len(data.records):,} records")
    return chain
