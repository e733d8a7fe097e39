"""Which continual-distillation settings move the model best: tcl's chain P1 -> P2 -> P3 (the
platforms and picks of bench_transfer.py) under several DistillConfig variants, beside the
fine-tuning baseline, from one source model.

Each --config is comma-separated key=value pairs of tcl.training.distill.DistillConfig fields, plus
``pool=target`` (distil on the measured 10% only) or ``pool=all`` (on every training program of
the platform, measurements unused; the default) and ``descriptor=1`` (the knowledge base reads
each platform's descriptor, tcl.tuning.platforms.descriptor; default 0). Prints one JSON line per
variant as it ends, then a summary line: per variant top1_new (mean over steps of the new
platform's top-1 of the KB), top1_column (the same for the active column before compress),
top1_old and forgetting.
Usage: python bench/bench_distill_sweep.py --config ewc_lambda=10 --config column_init=fresh ...
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _common import machine
from bench_transfer import Setting, default_dirs

from tcl.model import ForPlatform
from tcl.training import distill
from tcl.training.train import TrainConfig, train


def parse_variant(text: str) -> tuple[distill.DistillConfig, str, bool]:
    types = {f.name: f.type for f in dataclasses.fields(distill.DistillConfig)}
    values: dict[str, Any] = {}
    pool, use_descriptor = "all", False
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key == "descriptor":
            use_descriptor = value == "1"
        elif key == "pool":
            if value not in ("all", "target"):
                raise SystemExit(f"--config {text!r}: pool must be all or target")
            pool = value
        elif key in types:
            kind = {"int": int, "float": float, "str": str}[str(types[key])]
            values[key] = kind(value)
        else:
            raise SystemExit(f"--config {text!r}: no DistillConfig field {key!r}")
    return distill.DistillConfig(**values), pool, use_descriptor


def run_chain(
    setting: Setting,
    source: torch.nn.Module,
    config: distill.DistillConfig,
    pool: str,
    fraction: float,
    use_descriptor: bool,
) -> dict[str, Any]:
    names = setting.names
    descriptors = setting.descriptors if use_descriptor else [None] * len(names)
    learned = {0: setting.score(source, 0)["top1"]}
    chain = distill.Chain.start(source, names[0], setting.trains[0], config, descriptors[0])  # type: ignore[arg-type]
    new, column_new = [], []
    for p in range(1, len(names)):
        d = descriptors[p]
        target = setting.pick(chain.scorer(names[p - 1]), p, fraction)
        column = distill.progress(chain, target, config, d)
        column_new.append(setting.score(column if d is None else ForPlatform(column, d), p)["top1"])  # type: ignore[arg-type]
        pool_data = setting.trains[p] if pool == "all" else None
        chain = distill.compress(chain, column, target, names[p], config, pool_data, d)
        learned[p] = setting.score(chain.scorer(names[p]), p)["top1"]
        new.append(learned[p])
    last = {q: setting.score(chain.scorer(names[q]), q)["top1"] for q in range(len(names) - 1)}
    return {
        "top1_new": round(float(np.mean(new)), 4),
        "top1_column": round(float(np.mean(column_new)), 4),
        "top1_old": round(float(np.mean(list(last.values()))), 4),
        "forgetting": round(float(np.mean([learned[q] - last[q] for q in last])), 4),
        "per_step_new": new,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("dirs", nargs="*", type=Path)
    parser.add_argument("--config", action="append", default=[], help="a variant (repeatable)")
    parser.add_argument("--steps", type=int, default=600, help="training steps on P1")
    parser.add_argument("--fraction", type=float, default=0.1)
    parser.add_argument("--no-finetune", action="store_true", help="skip the baseline")
    args = parser.parse_args()
    torch.manual_seed(0)
    setting = Setting.load(args.dirs or default_dirs())
    start = time.time()
    source, _ = train(
        setting.trains[0], None, setting.config, TrainConfig(max_steps=args.steps), log=None
    )
    results: dict[str, Any] = {}
    if not args.no_finetune:
        model, new = source, []
        for p in range(1, len(setting.names)):
            target = setting.pick(model, p, args.fraction)
            model, _ = train(
                target,
                None,
                setting.config,
                TrainConfig(max_steps=300, warmup_steps=30),
                init=model,
                log=None,
            )
            new.append(setting.score(model, p)["top1"])
        results["finetune"] = {"top1_new": round(float(np.mean(new)), 4), "per_step_new": new}
        print(json.dumps({"variant": "finetune", **results["finetune"]}), flush=True)
    for text in args.config or [""]:
        config, pool, use_descriptor = parse_variant(text)
        began = time.time()
        results[text or "default"] = run_chain(
            setting, source, config, pool, args.fraction, use_descriptor
        )
        results[text or "default"]["seconds"] = round(time.time() - began, 1)
        print(json.dumps({"variant": text or "default", **results[text or "default"]}), flush=True)
    print(
        json.dumps(
            {
                "variants": results,
                "platforms": setting.names,
                "fraction": args.fraction,
                "seconds": round(time.time() - start, 1),
                "torch_threads": torch.get_num_threads(),
                "machine": machine(),
            }
        )
    )


if __name__ == "__main__":
    main()
