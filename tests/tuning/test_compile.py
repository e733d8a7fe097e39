"""Pre-packed weights: tasks extracted with layout-free weights, tuned, and built into a library
whose weights were transformed once, at build time."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tcl.tuning import platforms

pytestmark = pytest.mark.tvm


def small_cnn() -> tuple[object, object]:
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 6 * 6, 10),
    ).eval()
    return net, torch.randn(1, 8, 6, 6)


def calls_in_main(mod: object) -> int:
    return str(mod["main"]).count("R.call_tir(")  # type: ignore[index]


def test_prepacked_weights_build_what_pytorch_computes(tmp_path: Path) -> None:
    import torch
    from tvm.s_tir import meta_schedule as ms

    import tcl
    from tcl.tuning.compile import applied
    from tcl.zoo.extract import extracted_tasks, fuse, import_network

    net, x = small_cnn()
    platform = platforms.get("cpu-x86-64-1t")
    target = platform.tvm_target()
    mod = import_network(net, (x,))
    tasks = extracted_tasks(mod, target, weight_prepack=True)
    # every kernel with a weight marks it layout-free (the conv's and the dense's)
    marked = [t for t in tasks if "layout_free_buffers" in t.dispatched[0]["main"].attrs]
    assert len(marked) >= 2

    def workloads(tasks: list) -> set:
        return {ms.database.Workload(t.dispatched[0]).as_json()[0] for t in tasks}

    assert not workloads(tasks) & workloads(extracted_tasks(mod, target))  # other workloads

    work = tmp_path / "work"
    report = tcl.tune(
        net,
        (x,),
        platform=platform,
        trials=16,
        work_dir=work,
        name="cnn",
        cost_model="random",
        weight_prepack=True,
        rounds=2,
        progress=False,
    )
    assert report.weight_prepack and "weights pre-packed" in report.lines()[0]
    with torch.no_grad():
        expected = net(x).numpy()
    assert report.max_abs_error < 1e-4 * max(1.0, float(np.abs(expected).max()))
    # The schedules read rewritten weights: RewriteLayout put a TransformLayout in the traces.
    lines = (work / "database_tuning_record.json").read_text().splitlines()
    traces = [json.loads(line)[1][0] for line in lines]
    assert any(step[0] == "TransformLayout" for trace in traces for step in trace[0])
    # Built, no transform is left to run: main calls as many kernels as without pre-packing.
    database = ms.database.JSONDatabase(work_dir=str(work))
    prepacked = applied(database, mod, target, weight_prepack=True)
    assert calls_in_main(prepacked) == calls_in_main(fuse(mod, target))
    # The library runs in a process that only has stock TVM, on the original input alone.
    from test_tune import run_in_a_fresh_process

    np.save(tmp_path / "x.npy", x.numpy())
    fresh = run_in_a_fresh_process(Path(report.library), [tmp_path / "x.npy"])
    np.testing.assert_allclose(fresh, expected, rtol=1e-5, atol=1e-5)


def test_a_network_is_tuned_and_rebuilt_as_its_options_say() -> None:
    """as_tuned is the convolution layout, then fast math (unless exact math): the one module
    a run's tasks, its build and every rebuild of its database start from."""
    import torch
    import tvm

    from tcl.tuning.compile import as_tuned
    from tcl.tuning.fast_math import fast_math
    from tcl.tuning.layout import with_conv_layout
    from tcl.tuning.options import TuneOptions
    from tcl.zoo.extract import import_network

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(16, 16, 3), torch.nn.SiLU(), torch.nn.Conv2d(16, 16, 3), torch.nn.GELU()
    ).eval()
    mod = import_network(net, (torch.randn(1, 16, 8, 8),))
    assert as_tuned(mod, TuneOptions(exact_math=True)) is mod
    fast = as_tuned(mod, TuneOptions())
    assert fast.script() != mod.script()  # the SiLU and the GELU are approximated
    tvm.ir.assert_structural_equal(fast, fast_math(mod))
    both = as_tuned(mod, TuneOptions(conv_layout="NHWC"))
    tvm.ir.assert_structural_equal(both, fast_math(with_conv_layout(mod, "NHWC")))
    exact_nhwc = as_tuned(mod, TuneOptions(exact_math=True, conv_layout="NHWC"))
    tvm.ir.assert_structural_equal(exact_nhwc, with_conv_layout(mod, "NHWC"))
    assert exact_nhwc.script() != both.script() and 'data_layout="NHWC"' in both.script()
    # The fast SiLU is laid out as its blocked neighbours are: transforms only at the ends.
    # Approximated first, it would be a PrimFunc call the conversion cannot see into.
    blocked = as_tuned(mod, TuneOptions(conv_layout="NCHW16c"))
    assert str(blocked["main"]).count("R.layout_transform(") == 2
    opaque = with_conv_layout(fast_math(mod), "NCHW16c")
    assert str(opaque["main"]).count("R.layout_transform(") > 2
