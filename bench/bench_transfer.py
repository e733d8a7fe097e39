"""Moving a cost model across platforms P1 -> P2 -> P3 with 10% of each new platform's training
records: tcl's continual distillation against fine-tuning, training from scratch and multi-task
learning (one head per platform), in one harness, on the committed data.

P1's model is trained on all of P1's training networks. At each later platform, the RDU sampler
picks 10% of each training task's records in the current model's embedding space (the same
picks for every method); every platform's held-out networks are never trained on. After each
step every method is scored (top-1/top-5) on the held-out networks of every platform seen.

- tcl: the tcl.training.distill chain
  (KB anchored with P1's Fisher; progress + compress per platform; the
  KB reads each platform's descriptor unless --no-platform-input; compress distils on every
  training program of the new platform, their measurements unused).
- finetune: the previous model trained further on the new 10%.
- scratch: a new model trained on the new 10% only.
- mtl: one model, one head per platform, trained on all platforms' data at once (P1 all + the
  10% sets), retrained at each step; it grows by a head per platform.

Prints one JSON line: top1_new (mean over steps of the new platform's top-1), top1_old (mean
over earlier platforms after the last step), forgetting (mean over earlier platforms of top-1
right after learning it minus after the last step), bytes (after the last step), steps (detail).
Usage: python bench/bench_transfer.py [P1 P2 P3 data dirs] [--steps 600] [--fraction 0.1] [--seed 0]
       [--no-platform-input]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import machine
from torch import nn

from tcl import zoo
from tcl.model import ModelConfig, parameter_bytes
from tcl.model.inputs import predict
from tcl.records.dataset import Dataset, load_dataset
from tcl.sampling import sampler
from tcl.training import distill
from tcl.training.metrics import evaluate
from tcl.training.train import TrainConfig, train
from tcl.training.transfer import MultiHeadModel, train_multitask
from tcl.tuning.platforms import records_descriptor

ROOT = Path(__file__).resolve().parent.parent
ORDER = ("cpu-native-2t", "cpu-avx2-1t", "cpu-x86-64-1t")
METHODS = ("tcl", "finetune", "scratch", "mtl")


def default_dirs() -> list[Path]:
    dirs = []
    for name in ORDER:
        found = sorted((ROOT / "data").glob(f"{name}-*"))
        if not found:
            raise SystemExit(f"no committed data for {name} under data/")
        dirs.append(found[0])
    return dirs


def scores(model: nn.Module, test: Dataset, holdout: list[str]) -> dict[str, float]:
    result = evaluate(test, predict(model, test.records), holdout)
    return {"top1": round(float(result["top1"]), 4), "top5": round(float(result["top5"]), 4)}  # type: ignore[arg-type]


@dataclass
class Setting:
    """The platforms in chain order, one vocabulary for all (so that one model reads them
    all): training records, held-out test records and held-out network names of each."""

    names: list[str]
    trains: list[Dataset]
    tests: list[Dataset]
    holdouts: list[list[str]]
    config: ModelConfig
    descriptors: list[list[float]]  # tcl.tuning.platforms.descriptor of each platform's target

    @classmethod
    def load(cls, dirs: list[Path]) -> Setting:
        first = load_dataset(dirs)
        vocab, tokenizer = first.records.vocab.freeze(), first.records.tokenizer
        platforms = [load_dataset(d, vocab=vocab, tokenizer=tokenizer) for d in dirs]
        holdouts = [[n for n in zoo.HELD_OUT if n in p.network_names()] for p in platforms]
        return cls(
            names=[d.name.rsplit("-", 1)[0] for d in dirs],
            trains=[p.without_networks(list(zoo.HELD_OUT)) for p in platforms],
            tests=[p.of_networks(h) for p, h in zip(platforms, holdouts, strict=True)],
            holdouts=holdouts,
            config=ModelConfig(arch="mamba", vocab_size=len(vocab)),
            descriptors=[records_descriptor(p.records) for p in platforms],
        )

    def score(self, model: nn.Module, p: int) -> dict[str, float]:
        return scores(model, self.tests[p], self.holdouts[p])

    def pick(self, kb: nn.Module, p: int, fraction: float) -> Dataset:
        """The RDU sampler's pick of each training task's records of platform p, in the
        current model's embedding space."""
        records = self.trains[p].records
        rows = sampler.select_per_task(
            sampler.model_embeddings(kb, records), records.columns["task"], fraction
        )
        return self.trains[p].subset(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--steps", type=int, default=600, help="training steps (P1, MTL)")
    parser.add_argument("--target-steps", type=int, default=300, help="per phase on a target")
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument(
        "--seed", type=int, default=0, help="of every model's training (and so of the picks)"
    )
    parser.add_argument(
        "--platform-input",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="tcl's model reads the platform descriptor",
    )
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    setting = Setting.load(args.dirs or default_dirs())
    names, trains, config = setting.names, setting.trains, setting.config
    short = TrainConfig(max_steps=args.target_steps, warmup_steps=30, seed=args.seed)
    start = time.time()

    source, _ = train(
        trains[0], None, config, TrainConfig(max_steps=args.steps, seed=args.seed), log=None
    )
    models: dict[str, Any] = dict.fromkeys(("finetune", "scratch"), source)
    descriptors = setting.descriptors if args.platform_input else [None] * len(names)
    chain = distill.Chain.start(source, names[0], trains[0], descriptor=descriptors[0])  # type: ignore[arg-type]
    mtl: MultiHeadModel | None = None
    picked: list[Dataset] = [trains[0]]
    dcfg = distill.DistillConfig(
        progress_steps=args.target_steps, compress_steps=args.target_steps, seed=args.seed
    )

    def scorer(method: str, p: int) -> nn.Module:
        if method == "tcl":
            return chain.scorer(names[p])
        if method == "mtl":
            assert mtl is not None
            return mtl.for_platform(p)
        return models[method]  # type: ignore[no-any-return]

    learned: dict[str, dict[int, float]] = {
        m: {0: setting.score(source, 0)["top1"]} for m in METHODS
    }
    steps: list[dict[str, Any]] = []
    for p in range(1, len(names)):
        target = setting.pick(chain.scorer(names[p - 1]), p, args.fraction)
        picked.append(target)
        # Distillation reads the whole training pool's programs, never their measurements.
        chain = distill.step(chain, target, names[p], dcfg, trains[p], descriptors[p])
        models["finetune"], _ = train(
            target, None, config, short, init=models["finetune"], log=lambda *a: None
        )
        models["scratch"], _ = train(target, None, config, short, log=lambda *a: None)
        mtl = train_multitask(picked, config, TrainConfig(max_steps=args.steps, seed=args.seed))
        step: dict[str, Any] = {
            "platform": names[p],
            "target_records": len(target.records),
            "scores": {},
        }
        for method in METHODS:
            per = {names[q]: setting.score(scorer(method, q), q) for q in range(p + 1)}
            step["scores"][method] = per
            learned[method][p] = per[names[p]]["top1"]
        steps.append(step)
        print(json.dumps({"step": names[p], "scores": step["scores"]}), flush=True)

    last = steps[-1]["scores"]
    earlier = names[:-1]
    sizes = {
        "tcl": parameter_bytes(chain.kb),
        "finetune": parameter_bytes(models["finetune"]),
        "scratch": parameter_bytes(models["scratch"]),
        "mtl": parameter_bytes(mtl) if mtl is not None else 0,
    }
    print(
        json.dumps(
            {
                "top1_new": {
                    m: round(
                        float(np.mean([s["scores"][m][s["platform"]]["top1"] for s in steps])), 4
                    )
                    for m in METHODS
                },
                "top1_old": {
                    m: round(float(np.mean([last[m][n]["top1"] for n in earlier])), 4)
                    for m in METHODS
                },
                "forgetting": {
                    m: round(
                        float(
                            np.mean(
                                [
                                    learned[m][q] - last[m][names[q]]["top1"]
                                    for q in range(len(earlier))
                                ]
                            )
                        ),
                        4,
                    )
                    for m in METHODS
                },
                "bytes": sizes,
                "bytes_source": parameter_bytes(source),
                "steps": steps,
                "platforms": names,
                "holdout": setting.holdouts[0],
                "distill_config": asdict(dcfg),
                "platform_input": args.platform_input,
                "seed": args.seed,
                "train_records": [len(t.records) for t in trains],
                "fraction": args.fraction,
                "seconds": round(time.time() - start, 1),
                "torch_threads": torch.get_num_threads(),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
