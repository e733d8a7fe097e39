"""Makes the sample MetaSchedule database bundled with tcl (python/tcl/data/sample).

Real measurements on the machine that runs it: three small workloads tuned with MetaSchedule's
evolutionary search and XGB cost model. Usage: python scripts/make_sample_data.py OUT_DIR [TRIALS]
"""

from __future__ import annotations

import argparse
import time

import tvm
from tvm import te, topi

from tcl.integrations.tvm import measure


def workloads() -> dict[str, tvm.IRModule]:
    a = te.placeholder((128, 128), name="A")
    b = te.placeholder((128, 128), name="B")
    k = te.reduce_axis((0, 128), name="k")
    c = te.compute((128, 128), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    x = te.placeholder((1, 16, 28, 28), name="X")
    w = te.placeholder((32, 16, 3, 3), name="W")
    conv = topi.nn.relu(topi.nn.conv2d_nchw(x, w, stride=1, padding=1, dilation=1))
    d = te.placeholder((1, 256), name="D")
    e = te.placeholder((64, 256), name="E")
    dense = topi.nn.relu(topi.nn.dense(d, e))
    return {
        "matmul_128": tvm.IRModule({"main": te.create_prim_func([a, b, c])}),
        "conv2d_relu": tvm.IRModule({"main": te.create_prim_func([x, w, conv])}),
        "dense_relu": tvm.IRModule({"main": te.create_prim_func([d, e, dense])}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out_dir", help="where the database is written")
    parser.add_argument("trials", nargs="?", type=int, default=32, help="per workload")
    args = parser.parse_args()
    out, trials = args.out_dir, args.trials
    target = tvm.target.Target(
        {"kind": "llvm", "mcpu": tvm.target.codegen.llvm_get_system_cpu(), "num-cores": 2}
    )
    for name, mod in workloads().items():
        start = time.time()
        measure.tune_tir(mod, target, out, trials, per_iter=16, population=64)
        print(f"{name}: {trials} trials in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
