"""Trains the base model shipped in the package (python/tcl/data/base_model.pt): the default
Mamba cost model on every CPU platform of the committed dataset (data/), training networks only, so
that the held-out five stay unseen (bench/bench_tune.py tunes them). Prints one JSON line with
the run's figures; they are also stored in the checkpoint's ``extra``.

The model reads a platform descriptor (platforms.descriptor): every record is learnt under
its own platform's, and the tuner binds the target's (--no-platform-input: one model for all).

Usage: python scripts/train_base_model.py [DATA_DIR] [--out PATH] [--steps 3000]
       [--val within|task] [--seed 0] [--members 1] [--no-platform-input] [--no-search]
       [--loss lambdarank|lambdarank-top|mse] [--init CHECKPOINT] [--lr 2e-3]
       [--teacher CHECKPOINT] [--teacher-weight 0.5] [--rank-random-apart] [--soup]
       [--exclude NET,NET] [--exclude-platforms PLATFORM,PLATFORM]

Each platform's search-drawn programs (its ``search/`` store, ``tcl collect --search``) are
learnt beside its random ones unless --no-search; a task's programs of both are ranked
together, and with --rank-random-apart its random ones also among themselves (a tuner's quick
first round ranks random programs).

--val task keeps whole tasks out for validation (early stopping then rewards ranking unseen
tasks, which is what the held-out networks ask); --val within holds out programs of every task.
--members K trains K models of seeds SEED..SEED+K-1 and saves them as one (tcl.model.ensemble);
with --soup (and --init) the K fine-tunes' weights are averaged into one model of the usual size.
--init CHECKPOINT fine-tunes that model (its config, vocabulary and tokenizer) instead of
training a new one: a model that goes on learning from new data rather than being replaced.
--teacher CHECKPOINT (an ensemble of --members K, say) is distilled into the model trained: its
scores of the training records are targets beside the measurements (tcl.training.train).
--exclude leaves training networks out too, as the held-out ones are (with every task they
share), to measure what a network's records add; --exclude-platforms leaves platform directories
out (the packaged model did not learn the Zen 4's store: its recipe names it here).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from tcl import model, zoo
from tcl.cli.args import split_names
from tcl.model import ModelConfig
from tcl.model.ensemble import averaged
from tcl.model.inputs import calibrated_ensemble, predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.records.splits import split_by_task, split_within_task
from tcl.training.losses import LOSSES
from tcl.training.metrics import evaluate, mean_task_topk
from tcl.training.train import TrainConfig, train
from tcl.tuning.platforms import DESCRIPTOR_FEATURES

ROOT = Path(__file__).resolve().parent.parent


def _platform_manifest(directory: Path, search: bool) -> Path | None:
    """A platform directory's manifest: its random store's, or with ``search`` its search-drawn
    store's (a host may hold only search-drawn programs, tcl collect --search alone)."""
    for manifest in (directory / "manifest.json", directory / "search" / "manifest.json"):
        if manifest.exists() and (search or manifest.parent == directory):
            return manifest
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", type=Path, default=ROOT / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "python/tcl/data/base_model.pt")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument(
        "--patience", type=int, default=8, help="evaluations (every 100 steps) without progress"
    )
    parser.add_argument("--val", choices=("within", "task"), default="within")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--members", type=int, default=1, help="models of seeds SEED.. averaged as one"
    )
    parser.add_argument("--loss", choices=sorted(LOSSES), default="lambdarank")
    parser.add_argument("--init", type=Path, help="a checkpoint to fine-tune instead")
    parser.add_argument("--teacher", type=Path, help="a checkpoint to distil (an ensemble)")
    parser.add_argument(
        "--teacher-weight",
        type=float,
        default=0.5,
        help="the teacher's share of the loss, the measurements' the rest",
    )
    parser.add_argument("--lr", type=float, default=TrainConfig.lr, help="peak learning rate")
    parser.add_argument("--platform-input", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--search",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="learn the search-drawn programs (each platform's search/ store) too",
    )
    parser.add_argument(
        "--rank-random-apart",
        action="store_true",
        help="also rank each task's random programs among themselves (TrainConfig)",
    )
    parser.add_argument(
        "--soup",
        action="store_true",
        help="average the --members' weights into one model (fine-tunes of --init only)",
    )
    parser.add_argument(
        "--exclude",
        default="",
        help="comma-separated training networks left out of training, like the held-out ones",
    )
    parser.add_argument(
        "--exclude-platforms",
        default="",
        help="comma-separated platform directories of DATA left out (a host's store that a "
        "model is moved to by tcl distill instead)",
    )
    args = parser.parse_args()
    excluded = split_names(args.exclude)
    unknown = [n for n in excluded if n not in zoo.TRAINING]
    if unknown:
        parser.error(f"--exclude: not training networks of the zoo: {', '.join(unknown)}")
    if args.soup and not (args.init and args.members > 1):
        parser.error("--soup averages fine-tunes: it needs --init and --members K > 1")
    directories = list(args.data.iterdir())
    left_out = set(split_names(args.exclude_platforms))
    if missing := sorted(left_out - {p.name for p in directories}):
        parser.error(f"--exclude-platforms: not in {args.data}: {', '.join(missing)}")
    # The CPU platforms: a GPU platform's records move the model to the GPU afterwards (tcl
    # distill made the packaged base_model_cuda.pt from them).
    platforms = sorted(
        p
        for p in directories
        if p.name not in left_out
        and (manifest := _platform_manifest(p, args.search))
        and json.loads(manifest.read_text())["platform"]["target"]["kind"] == "llvm"
    )
    stores = [*platforms, *(p / "search" for p in platforms if args.search)]
    # fine-tuning reads the records with the checkpoint's own vocabulary and tokenizer
    init, vocab, tokenizer, _ = model.load(args.init) if args.init else (None, None, None, None)
    teacher = None
    if args.teacher:  # it reads the records with its own vocabulary, as the student then does
        if args.init:
            parser.error("--init and --teacher: a student starts anew (one vocabulary to read)")
        teacher, vocab, tokenizer, _ = model.load(args.teacher)
    data = load_dataset(
        [s for s in stores if (s / "manifest.json").exists()], vocab=vocab, tokenizer=tokenizer
    )
    held_out = [n for n in zoo.HELD_OUT if n in data.network_names()]
    training = data.without_networks([*zoo.HELD_OUT, *excluded])
    split = split_by_task if args.val == "task" else split_within_task
    fit, val = split(training.records, args.val_fraction, seed=0)
    start = time.time()
    config = (
        init.config
        if init
        else ModelConfig(
            arch="mamba",
            vocab_size=len(data.records.vocab),
            platform_features=len(DESCRIPTOR_FEATURES) if args.platform_input else 0,
        )
    )
    fit_data, val_data = (
        Dataset(fit, data.networks, data.names),
        Dataset(val, data.networks, data.names),
    )
    nets, histories = [], []
    for k in range(args.members):  # an ensemble's members differ by their seed only
        net, history = train(
            fit_data,
            val_data,
            config,
            TrainConfig(
                max_steps=args.steps,
                patience=args.patience,
                seed=args.seed + k,
                loss=args.loss,
                lr=args.lr,
                rank_random_apart=args.rank_random_apart,
            ),
            init=init,
            teacher=teacher,
            teacher_weight=args.teacher_weight,
        )
        nets.append(net)
        histories.append(history)
    if args.members > 1:
        net = averaged(nets) if args.soup else calibrated_ensemble(nets, fit)
    test = data.of_networks(held_out)
    scores = predict(net, test.records)
    held_out_scores = evaluate(test, scores, held_out)
    ensemble_members = nets if args.members > 1 else []  # each alone, scored the same way
    members = [evaluate(test, predict(n, test.records), held_out) for n in ensemble_members]
    target = test.records.columns["target"]
    per_platform = {
        test.records.targets[t]: evaluate(test.subset(target == t), scores[target == t], held_out)
        for t in sorted(set(target.tolist()))
    }
    figures = {
        "platforms": [p.name for p in platforms],
        "search_drawn": args.search,
        "train_records": len(fit),
        "val_records": len(val),
        "training_networks": training.networks_with_records(),
        "excluded": excluded,
        "steps": [h["steps"][-1]["step"] if h["steps"] else 0 for h in histories],
        "validation": args.val,
        "loss": args.loss,
        "init": args.init.name if args.init else None,
        "teacher": args.teacher.name if args.teacher else None,
        "teacher_weight": args.teacher_weight if args.teacher else None,
        "lr": args.lr,
        "rank_random_apart": args.rank_random_apart,
        "soup": args.soup,
        "seeds": [args.seed + k for k in range(args.members)],
        "best_val_top1": [round(h["best_val_top1"], 4) for h in histories],
        "val_top1": round(mean_task_topk(val_data, predict(net, val)), 4),
        "platform_input": args.platform_input,
        "held_out": held_out_scores,
        "held_out_members": [
            {k: round(m[k], 4) for k in ("top1", "top5", "pairwise_accuracy")} for m in members
        ],
        "held_out_per_platform": per_platform,
        "train_seconds": round(time.time() - start, 1),
        "bytes": model.parameter_bytes(net),
        "torch": str(torch.__version__),
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%d"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out, net, data.records.vocab, data.records.tokenizer, {"training": figures})
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
