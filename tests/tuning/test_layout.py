"""Convolutions tuned and built in another data layout compute what the network computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tcl.tuning import platforms
from tcl.tuning.layout import (
    blocked_transform_schedule,
    check_conv_layout,
    conv2d_nchwc,
    default_conv_layout,
    has_conv2d,
    legalize_blocked_convs,
    scheduled_layout_transforms,
    with_conv_layout,
)
from tcl.tuning.options import TuneOptions

pytestmark = pytest.mark.tvm


def small_cnn() -> tuple[object, object]:
    """Two convolutions (one grouped) with batch norm between them, then a layout-bound
    flatten: the layout must change back before it."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(8, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 16, 3, padding=1, groups=16),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 6 * 6, 10),
    ).eval()
    with torch.no_grad():  # batch norm statistics other than the identity's
        net[1].running_mean.uniform_(-0.5, 0.5)
        net[1].running_var.uniform_(0.5, 2.0)
    return net, torch.randn(1, 8, 6, 6)


def test_an_unknown_layout_is_refused() -> None:
    check_conv_layout(None)
    check_conv_layout("NCHW")
    check_conv_layout("NHWC")
    check_conv_layout("NCHW16c")
    check_conv_layout("NCHW8c")
    with pytest.raises(
        ValueError, match="unknown convolution layout 'NCHW4c': choose one of NCHW, "
    ):
        check_conv_layout("NCHW4c")
    with pytest.raises(ValueError, match="unknown convolution layout"):
        TuneOptions(conv_layout="nhwc")


def test_a_cpu_with_avx512_blocks_its_convolutions_by_16_and_any_other_platform_keeps_them() -> (
    None
):
    assert default_conv_layout({"kind": "llvm", "mcpu": "skylake-avx512", "num-cores": 2}) == (
        "NCHW16c"
    )
    assert default_conv_layout({"kind": "llvm", "mcpu": "znver4"}) == "NCHW16c"
    assert default_conv_layout({"kind": "llvm", "mcpu": "x86-64", "mattr": ["+avx512f"]}) == (
        "NCHW16c"
    )
    for target in (
        {"kind": "llvm", "mcpu": "core-avx2"},
        {"kind": "llvm", "mcpu": "znver3", "num-cores": 1},
        {"kind": "llvm", "mcpu": "x86-64"},
        {"kind": "cuda", "arch": "sm_90"},
        {"tag": "nvidia/nvidia-h100", "host": {"kind": "llvm", "mcpu": "sapphirerapids"}},
    ):
        assert default_conv_layout(target) == "NCHW", target
    for name in ("cpu-avx512-2t", "cpu-avx2-1t", "cpu-x86-64-1t"):
        expected = "NCHW16c" if name == "cpu-avx512-2t" else "NCHW"
        assert default_conv_layout(platforms.get(name).target) == expected


def test_nhwc_convolutions_read_channels_last_and_no_weight_is_transformed_at_run_time() -> None:
    import torch

    from tcl.zoo.extract import extracted_tasks, import_network

    net, x = small_cnn()
    mod = import_network(net, (x,))
    assert with_conv_layout(mod, None) is mod
    assert with_conv_layout(mod, "NCHW") is mod  # as imported
    assert has_conv2d(mod)
    mlp = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(8 * 6 * 6, 4)).eval()
    dense = import_network(mlp, (x,))
    assert not has_conv2d(dense)
    assert with_conv_layout(dense, "NCHW16c") is dense  # nothing to convert: built as it was
    nhwc = with_conv_layout(mod, "NHWC")
    main = str(nhwc["main"])
    # the input's transform and the one back before the flatten; the weights' were folded
    assert main.count("R.layout_transform(") + main.count("R.permute_dims(") == 2
    assert "R.nn.conv2d" in main and 'data_layout="NHWC"' in main
    target = platforms.get("cpu-x86-64-1t").tvm_target()
    convs = [
        t.dispatched[0].script() for t in extracted_tasks(nhwc, target) if "conv2d" in t.task_name
    ]
    assert len(convs) == 2
    # channels last: the input of the first convolution is (1, 6, 6, 8), padded (1, 8, 8, 8)
    assert any("T.int64(6), T.int64(6), T.int64(8)" in script for script in convs)


def blocked_cnn() -> tuple[object, object]:
    """Channels that divide into 16-lane blocks: a convolution, batch norm and ReLU6, a strided
    depthwise one, a grouped one, a pointwise one; the stem's 3 channels do not divide."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.BatchNorm2d(32),
        torch.nn.ReLU6(),
        torch.nn.Conv2d(32, 32, 3, stride=2, padding=1, groups=32),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 1, groups=2),
        torch.nn.Conv2d(32, 16, 1),
        torch.nn.Flatten(),
        torch.nn.Linear(16 * 4 * 4, 10),
    ).eval()
    return net, torch.randn(1, 3, 8, 8)


@pytest.mark.parametrize(
    ("lanes", "channels", "groups", "kernel", "stride", "padding", "dilation"),
    [
        (16, (32, 48), 1, 3, 1, (1, 1, 1, 1), 1),
        (16, (32, 16), 1, 1, 2, (0, 0, 0, 0), 1),
        (16, (32, 32), 32, 3, 2, (1, 0, 2, 1), 1),
        (16, (32, 64), 4, 3, 1, (2, 2, 2, 2), 2),
        (8, (24, 24), 24, 3, 1, (1, 1, 1, 1), 1),
    ],
    ids=["3x3", "1x1-strided", "depthwise", "grouped-dilated", "8-lane-depthwise"],
)
def test_the_blocked_convolution_computes_what_pytorch_does(
    lanes: int,
    channels: tuple[int, int],
    groups: int,
    kernel: int,
    stride: int,
    padding: tuple[int, int, int, int],
    dilation: int,
) -> None:
    import torch
    import tvm
    from tvm import te

    c_in, c_out = channels
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, c_in, 9, 10)).astype("float32")
    w = rng.standard_normal((c_out, c_in // groups, kernel, kernel)).astype("float32")
    # NCHW -> NCHW[lanes]c, OIHW -> OIHW[lanes]o, as relax's layout transforms store them
    x_blocked = x.reshape(1, c_in // lanes, lanes, 9, 10).transpose(0, 1, 3, 4, 2)
    w_blocked = w.reshape(c_out // lanes, lanes, *w.shape[1:]).transpose(0, 2, 3, 4, 1)
    data = te.placeholder(x_blocked.shape, name="data")
    weight = te.placeholder(w_blocked.shape, name="weight")
    strides, dilations = [stride, stride], [dilation, dilation]
    out = conv2d_nchwc(data, weight, strides, list(padding), dilations, groups, "float32")
    kernel_fn = tvm.compile(te.create_prim_func([data, weight, out]), target="llvm")
    got = tvm.runtime.empty([int(d) for d in out.shape], "float32")
    kernel_fn(
        tvm.runtime.tensor(np.ascontiguousarray(x_blocked)),
        tvm.runtime.tensor(np.ascontiguousarray(w_blocked)),
        got,
    )
    top, left, bottom, right = padding
    padded = torch.nn.functional.pad(torch.from_numpy(x), (left, right, top, bottom))
    expected = torch.nn.functional.conv2d(
        padded, torch.from_numpy(w), stride=stride, dilation=dilation, groups=groups
    ).numpy()
    n, c, h, wd = expected.shape
    unblocked = got.numpy().transpose(0, 1, 4, 2, 3).reshape(n, c, h, wd)
    # float32 sums of at most 32 x 9 products of unit normals, taken in another order
    np.testing.assert_allclose(unblocked, expected, rtol=1e-4, atol=1e-4)


def test_a_blocked_convolution_to_another_layout_is_refused() -> None:
    from tvm import relax

    builder = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 2, 8, 8, 16), "float32"))
    w = relax.Var("w", relax.TensorType((2, 32, 3, 3, 16), "float32"))
    with builder.function("main", [x, w]):
        conv = relax.op.nn.conv2d(
            x, w, data_layout="NCHW16c", kernel_layout="OIHW16o", out_layout="NCHW"
        )
        builder.emit_func_output(builder.emit(conv))
    with pytest.raises(ValueError, match="NCHW16c to NCHW with OIHW16o weights"):
        legalize_blocked_convs(builder.get())


def test_blocked_convolutions_keep_their_layout_between_them() -> None:
    from tcl.zoo.extract import extracted_tasks, import_network

    net, x = blocked_cnn()
    blocked = with_conv_layout(import_network(net, (x,)), "NCHW16c")
    main = str(blocked["main"])
    assert "R.clip" not in main  # ReLU6 as bounds, which follow the blocked layout
    # into the second convolution (the stem's 3 channels stay NCHW) and out before the flatten
    assert main.count("R.layout_transform(") == 2
    target = platforms.get("cpu-x86-64-1t").tvm_target()
    names = [t.task_name for t in extracted_tasks(blocked, target)]
    assert sum("conv2d_NCHWc" in name for name in names) == 4
    assert sum("maximum" in name and "minimum" in name for name in names) == 1


def fused_blocked_cnn(threads: int = 1) -> tuple[object, object]:
    """The blocked CNN fused for a CPU target of ``threads`` cores, and the target."""
    import tvm

    from tcl.zoo.extract import fuse, import_network

    net, x = blocked_cnn()
    blocked = with_conv_layout(import_network(net, (x,)), "NCHW16c")
    target = tvm.target.Target({**platforms.get("cpu-x86-64-1t").target, "num-cores": threads})
    return fuse(blocked, target), target


def copies(func: object, target: object) -> tuple[np.ndarray, np.ndarray]:
    """What ``func`` (a PrimFunc of one input and one output) writes from a random input, built
    for ``target``, and that input."""
    import tvm

    source, dest = ([int(d) for d in p.shape] for p in func.params)  # type: ignore[attr-defined]
    x = np.random.default_rng(0).standard_normal(source).astype("float32")
    out = tvm.runtime.tensor(np.zeros(dest, "float32"))
    built = tvm.compile(tvm.IRModule({"main": func.with_attr("global_symbol", "main")}), target)  # type: ignore[attr-defined]
    built.jit()["main"](tvm.runtime.tensor(x), out)
    return out.numpy(), x


@pytest.mark.parametrize("threads", [1, 2])
def test_a_transform_into_blocks_is_scheduled_and_moves_every_value_where_it_was(
    threads: int,
) -> None:
    import tvm

    fused, target = fused_blocked_cnn(threads)
    transforms = {
        gvar.name_hint: func
        for gvar, func in fused.functions_items()  # type: ignore[attr-defined]
        if gvar.name_hint.startswith("te_layout_transform")
    }
    assert len(transforms) == 2  # into the blocked layout after the stem, and out at the end
    scheduled = scheduled_layout_transforms(fused, target)
    into = [name for name, f in transforms.items() if len(f.params[1].shape) == 5]
    assert len(into) == 1
    assert "T.vectorized" not in fused[into[0]].script()  # type: ignore[index]  # a new module
    for name, func in transforms.items():
        now = scheduled[name]  # type: ignore[index]
        if name not in into:  # the transform out of blocks reads in order: left as it was
            tvm.ir.assert_structural_equal(now, func)
            continue
        script = now.script()
        assert "T.vectorized(T.int64(16))" in script
        assert ("T.parallel(" in script) == (threads > 1)
        # a copy: no arithmetic, so every value must be bitwise where the layout puts it
        got, x = copies(now, target)
        legalized, _ = copies(func, target)
        np.testing.assert_array_equal(got, legalized)
        np.testing.assert_array_equal(got, x.reshape(1, 1, 16, 8, 8).transpose(0, 1, 3, 4, 2))
    for gvar, func in fused.functions_items():  # type: ignore[attr-defined]
        if gvar.name_hint not in into:  # nothing else is touched
            tvm.ir.assert_structural_equal(scheduled[gvar], func)


def test_only_a_lone_transform_of_nchw_into_blocks_is_scheduled() -> None:
    from tvm import tirx

    fused, _ = fused_blocked_cnn()
    kinds = {}
    for gvar, func in fused.functions_items():  # type: ignore[attr-defined]
        if isinstance(func, tirx.PrimFunc) and "layout_transform" not in gvar.name_hint:
            kinds[gvar.name_hint] = blocked_transform_schedule(func, 1)
    assert any("conv2d_NCHWc" in name for name in kinds)
    assert all(result is None for result in kinds.values())


@pytest.mark.parametrize("layout", ["NHWC", "NCHW16c"])
def test_a_network_tuned_in_another_layout_computes_what_pytorch_computes(
    tmp_path: Path, layout: str
) -> None:
    import torch

    import tcl

    net, x = small_cnn() if layout == "NHWC" else blocked_cnn()
    report = tcl.tune(
        net,
        (x,),
        platform=platforms.get("cpu-x86-64-1t"),
        trials=12,
        work_dir=tmp_path / "work",
        name="cnn",
        cost_model="random",
        conv_layout=layout,
        rounds=2,
        progress=False,
    )
    assert report.settings.conv_layout == layout
    assert f"convolutions in {layout}" in report.lines()[0]
    with torch.no_grad():
        expected = net(x).numpy()
    # float32 sums of at most 288 products taken in another order, and batch norm folded
    assert report.max_abs_error < 1e-4 * max(1.0, float(np.abs(expected).max()))
