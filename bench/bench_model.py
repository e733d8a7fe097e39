"""Cost-model speed on the CPU: Mamba against the TLP-style attention and LSTM baselines, same
tokens, same sequence length, same batch, one run.

Tokens are real: the bundled sample database's records, tiled to fill the batches. Training
speed is forward + backward + AdamW step with the lambdarank loss over task groups; inference is
forward only in eval mode. Prints one JSON line:
{"models": {"mamba": {"params", "bytes", "train_samples_per_s", "infer_candidates_per_s"}, ...}}

Usage: python bench/bench_model.py [--batch 512] [--infer-batch 2048] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np
import torch
from _common import machine

from tcl import RecordSet, model, read_records
from tcl.cli import sample_data_path
from tcl.losses import lambdarank
from tcl.model import ModelConfig


def best_time(fn: Callable[[], None], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def time_model(
    arch: str,
    rs: RecordSet,
    tokens: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    args: argparse.Namespace,
) -> dict[str, int]:
    kinds_all, fields_all, labels = tokens
    net = model.build(
        ModelConfig(arch=arch, vocab_size=len(rs.vocab), max_len=rs.tokenizer.max_len)
    )
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    kinds, fields, y = kinds_all[: args.batch], fields_all[: args.batch], labels[: args.batch]

    def step() -> None:
        net.train()
        scores = net(kinds, fields)
        # Lambdarank over 8 task-sized groups, as in training.
        parts = zip(scores.chunk(8), y.chunk(8), strict=True)
        loss = torch.stack([lambdarank(s, t) for s, t in parts]).mean()
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    def infer() -> None:
        net.eval()
        with torch.no_grad():
            net(kinds_all[: args.infer_batch], fields_all[: args.infer_batch])

    return {
        "params": model.num_parameters(net),
        "bytes": model.parameter_bytes(net),
        "train_samples_per_s": round(args.batch / best_time(step, args.repeats)),
        "infer_candidates_per_s": round(args.infer_batch / best_time(infer, args.repeats)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--infer-batch", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    rs = read_records(sample_data_path())
    length = int(rs.lengths.max())
    rows = np.resize(np.arange(len(rs)), max(args.batch, args.infer_batch))
    tokens = (
        torch.from_numpy(rs.kinds[rows, :length].astype(np.int64)),
        torch.from_numpy(np.ascontiguousarray(rs.fields[rows, :length])),
        torch.from_numpy(rs.throughput()[rows]).float(),
    )
    models = {arch: time_model(arch, rs, tokens, args) for arch in ("mamba", "attention", "lstm")}
    figures = {
        "models": models,
        "sequence_length": length,
        "batch": args.batch,
        "infer_batch": args.infer_batch,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "method": f"best of {args.repeats} after a warm-up; real tokens (bundled sample)",
        "machine": machine(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
