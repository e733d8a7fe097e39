"""Cost-model speed on the CPU (or a GPU): Mamba against the TLP-style attention and LSTM
baselines, same tokens, same sequence length, same batch, one run.

Tokens are real: measured records of the committed dataset (DATA, default the first platform
under data/; the bundled sample when there is none), tiled to fill the batches. Training speed is
forward + backward + AdamW step with the lambdarank loss over 8 task-sized groups, at the
batch's longest sequence; inference is tcl.model.inputs.predict (eval mode, batches of similar
length), as the tuner's cost model calls it. The Mamba model is timed once per instruction-set
build of its C++ kernels that the CPU runs ("mamba[avx512]", "mamba[avx2]",
"mamba[baseline]"; "mamba" is the build chosen by default), interleaved with the baselines over
--rounds rounds (best kept).
Prints one JSON line:
{"models": {"mamba": {"params", "bytes", "train_samples_per_s", "infer_candidates_per_s"},
 "mamba[avx2]": {...}, "attention": {...}, "lstm": {...}}, "machine": {"kernel_isa", ...}}

With --device cuda the models train and score on the GPU (mamba_ssm's fused scan where it
imports, else the PyTorch twins of the kernels; "mamba" alone, the C++ kernels being the CPU's),
timed to the end of their kernels (the device synchronized), beside the same models on the CPU
in the same run ("cpu:" labels), and the GPU is named.

Usage: python bench/bench_model.py [DATA] [--batch 512] [--infer-records 8192] [--repeats 5]
       [--rounds 2] [--device cpu|cuda]
As an AVX2-only CPU (PyTorch's kernels capped too), with the environment
       TCL_KERNEL_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from _common import machine

from tcl import RecordSet, model, read_records
from tcl.model import ModelConfig, kernels
from tcl.model.inputs import predict, tensors
from tcl.records import sample_data_path
from tcl.training.losses import lambdarank


def best_time(fn: Callable[[], None], repeats: int, device: str = "cpu") -> float:
    def timed() -> float:
        start = time.perf_counter()
        fn()
        if device != "cpu":
            torch.cuda.synchronize()
        return time.perf_counter() - start

    timed()  # warm-up
    return min(timed() for _ in range(repeats))


def time_model(
    arch: str, rs: RecordSet, args: argparse.Namespace, device: str = "cpu"
) -> dict[str, int]:
    net = model.build(
        ModelConfig(arch=arch, vocab_size=len(rs.vocab), max_len=rs.tokenizer.max_len)
    ).to(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3)
    kinds, fields = (x.to(device) for x in tensors(rs, np.arange(args.batch)))
    y = torch.from_numpy(rs.throughput()[: args.batch]).float().to(device)
    pool = rs.select(np.arange(args.infer_records))

    def step() -> None:
        net.train()
        scores = net(kinds, fields)
        parts = zip(scores.chunk(8), y.chunk(8), strict=True)
        loss = torch.stack([lambdarank(s, t) for s, t in parts]).mean()
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    return {
        "params": model.num_parameters(net),
        "bytes": model.parameter_bytes(net),
        "train_samples_per_s": round(args.batch / best_time(step, args.repeats, device)),
        "infer_candidates_per_s": round(
            len(pool) / best_time(lambda: predict(net, pool), args.repeats, device)
        ),
    }


def time_kernels(repeats: int) -> dict[str, dict[str, float]]:
    """Milliseconds of each C++ kernel per build, one thread, on a 512 x 40 x 64 batch (8 states,
    width-4 convolution) of random operands: the kernels alone, without the model around them."""
    from tcl import _core

    rng = np.random.default_rng(0)

    def randn(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    u, delta, z, x = (randn(512, 40, 64) for _ in range(4))
    a, b, c = -np.abs(randn(8, 64)), randn(512, 40, 8), randn(512, 40, 8)
    d, bias, w = randn(64), randn(64), randn(4, 64)
    scan = (u, delta, a, b, c, d, z, bias, True)
    out: dict[str, dict[str, float]] = {}
    for isa in reversed(kernels.supported()):
        with kernels.forced(isa):
            y = _core.selective_scan_forward(*scan, 1)
            calls = {
                "scan_forward": lambda: _core.selective_scan_forward(*scan, 1),
                "scan_backward": lambda y=y: _core.selective_scan_backward(*scan, y, 1),
                "conv_forward": lambda: _core.causal_conv_forward(x, w, bias, 1),
                "conv_backward": lambda: _core.causal_conv_backward(x, w, bias, x, 1),
            }
            out[isa] = {k: round(best_time(f, repeats) * 1e3, 2) for k, f in calls.items()}
    return out


def default_data() -> Path:
    snapshots = sorted(p for p in (Path(__file__).parent.parent / "data").glob("*") if p.is_dir())
    return snapshots[0] if snapshots else sample_data_path()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", type=Path, default=None)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--infer-records", type=int, default=8192)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (best kept)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = parser.parse_args()
    torch.manual_seed(0)
    data = args.data or default_data()
    rs = read_records(data)
    rs = rs.select(rs.columns["error"] == 0)
    # Shuffled (fixed seed) and tiled: batches mix tasks and lengths as training and tuning do.
    rows = np.random.default_rng(0).permutation(len(rs))
    rs = rs.select(np.resize(rows, max(args.batch, args.infer_records)))
    contenders = [(f"mamba[{isa}]", "mamba", isa, "cpu") for isa in reversed(kernels.supported())]
    contenders += [("attention", "attention", "auto", "cpu"), ("lstm", "lstm", "auto", "cpu")]
    if args.device != "cpu":  # the same three on the GPU, the CPU's beside them
        contenders = [
            (f"cpu:{arch}", arch, "auto", "cpu") for arch in ("mamba", "attention", "lstm")
        ] + [(arch, arch, "auto", args.device) for arch in ("mamba", "attention", "lstm")]
    models: dict[str, dict[str, int]] = {}
    for _ in range(args.rounds):
        for label, arch, isa, device in contenders:
            torch.manual_seed(0)
            with kernels.forced(isa):
                figures = time_model(arch, rs, args, device)
            best = models.setdefault(label, figures)
            for key in ("train_samples_per_s", "infer_candidates_per_s"):
                best[key] = max(best[key], figures[key])
    if args.device == "cpu":
        models = {"mamba": dict(models[f"mamba[{kernels.active()}]"]), **models}
    figures = {
        "models": models,
        "kernels_ms": time_kernels(args.repeats),
        "device": args.device,
        "gpu": torch.cuda.get_device_name() if args.device != "cpu" else None,
        "records": str(data),
        "mean_length": round(float(rs.lengths.mean()), 1),
        "max_length": int(rs.lengths.max()),
        "batch": args.batch,
        "infer_records": args.infer_records,
        "torch": torch.__version__,
        # AVX2 / AVX512: ATEN_CPU_CAPABILITY=avx2 (with ONEDNN_MAX_CPU_ISA=AVX2) caps PyTorch's
        # own kernels, so that an AVX-512 machine stands in for an AVX2-only CPU.
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(),
        "method": f"best of {args.rounds} interleaved rounds x {args.repeats} repeats, warmed up",
        "machine": machine(),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
